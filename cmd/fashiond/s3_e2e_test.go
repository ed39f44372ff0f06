package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/s3test"
	"fashiond/internal/testenv"
	"fashiond/jobs/redistest"
)

// TestS3SplitDeployment runs `fashiond api` and two `fashiond worker`
// processes, each with its own data directory, over one real redis-server
// and one bucket of a real S3 server (versitygw): the API spools the input
// images to the bucket, either worker reads them and writes the outputs
// there, the API's /cdn/ serves them from the bucket, the spooled inputs
// are gone once the jobs end, DELETE removes a job's outputs from the
// bucket, and no process wrote a blob to its data directory.
func TestS3SplitDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary")
	}
	const bucket, prefix = "fashiond-e2e", "prod/eu"
	s3 := s3test.Start(t)
	s3.MakeBucket(t, bucket)
	redisAddr := redistest.Start(t)
	addr := freeAddr(t)
	dataAPI, dataW1, dataW2 := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(os.Environ(),
		"FASHIOND_ADDR="+addr, "FASHIOND_API_KEYS="+testKey+":10",
		"FASHIOND_MODELS_DIR="+filepath.Join(pipelinetest.Root(), "data", "models"), "FASHIOND_ORT_LIB="+testenv.ORTLib(),
		"FASHIOND_LOG_LEVEL=warn", "FASHIOND_REDIS_URL=redis://"+redisAddr+"/0", "FASHIOND_CONCURRENCY=1",
		"FASHIOND_STORAGE=s3://"+bucket+"/"+prefix, "FASHIOND_S3_ENDPOINT="+s3.Endpoint, "FASHIOND_S3_REGION="+s3.Region,
		"FASHIOND_S3_PATH_STYLE=on", "FASHIOND_S3_ACCESS_KEY="+s3.AccessKey, "FASHIOND_S3_SECRET_KEY="+s3.SecretKey)
	bin := buildBinary(t)
	api := &server{t: t, bin: bin, args: []string{"api"}, env: append(env, "FASHIOND_DATA_DIR="+dataAPI), base: "http://" + addr}
	api.start()
	defer api.stop()
	procs := []*server{api}
	for _, dir := range []string{dataW1, dataW2} {
		w := &server{t: t, bin: bin, args: []string{"worker"}, env: append(env, "FASHIOND_DATA_DIR="+dir, "FASHIOND_QUEUES=tryon")}
		w.start()
		defer w.stop()
		procs = append(procs, w)
	}
	waitServed(t, api, "tryon")

	ids := submitTryons(t, api, 2)
	objects := filepath.Join(s3.Dir, bucket, filepath.FromSlash(prefix))
	for _, id := range ids {
		done := api.wait(id)
		if done.Status != "succeeded" || len(done.Output) != 1 {
			t.Fatalf("job %s finished as %+v", id, done)
		}
		checkOutput(t, done.Output[0], api.base+"/cdn/"+id+"/", filepath.Join(objects, id))
		if ents, _ := os.ReadDir(filepath.Join(objects, "private", "inputs", id)); len(ents) != 0 {
			t.Errorf("job %s: %d spooled inputs left in the bucket after the job ended", id, len(ents))
		}
	}
	// DELETE removes the outputs from the bucket (the janitor's path at
	// the retention's end too).
	if code, _ := api.do("DELETE", "/v1/jobs/"+ids[0], testKey, nil, nil); code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("DELETE /v1/jobs/%s: HTTP %d", ids[0], code)
	}
	if ents, _ := os.ReadDir(filepath.Join(objects, ids[0])); len(ents) != 0 {
		t.Errorf("DELETE left %d objects of job %s in the bucket", len(ents), ids[0])
	}
	for _, dir := range []string{dataAPI, dataW1, dataW2} {
		if _, err := os.Stat(filepath.Join(dir, "blobs")); err == nil {
			t.Errorf("%s/blobs exists: a process wrote blobs locally", dir)
		}
	}
	for _, p := range procs {
		if strings.Contains(p.log.String(), s3.SecretKey) {
			t.Fatalf("the S3 secret key is in the log of %v", p.args)
		}
	}
}

// submitTryons submits n try-on jobs at once with data URI inputs (which
// the API spools to the bucket) and returns their ids.
func submitTryons(t *testing.T, api *server, n int) []string {
	t.Helper()
	req := map[string]any{"model_name": "tryon", "inputs": map[string]any{
		"personImage":  pipelinetest.DataURI(t, "images/fashn_model.webp"),
		"garmentImage": pipelinetest.DataURI(t, "garments/flatlay_tee_red.png"),
	}}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var j jobBody
			if code, _ := api.do("POST", "/v1/run", testKey, req, &j); code != 200 || j.ID == "" {
				t.Errorf("POST /v1/run: HTTP %d %+v", code, j)
			}
			ids[i] = j.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// checkOutput fetches an output URL (under wantPrefix: the API's /cdn/)
// and compares it with the object the bucket holds.
func checkOutput(t *testing.T, u, wantPrefix, objDir string) {
	t.Helper()
	if !strings.HasPrefix(u, wantPrefix) {
		t.Fatalf("output URL %q, want it under %s", u, wantPrefix)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") || len(body) == 0 {
		t.Fatalf("GET %s: %d %s, %d bytes", u, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	stored, err := os.ReadFile(filepath.Join(objDir, u[strings.LastIndex(u, "/")+1:]))
	if err != nil || !bytes.Equal(stored, body) {
		t.Fatalf("the bucket's object differs from what /cdn/ served (%v)", err)
	}
}
