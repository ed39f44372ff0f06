package jobs

import (
	"context"
	"image"
	"net/http"
	"strings"
	"testing"
	"time"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/s3test"
	"fashiond/jobs/internal/rdb"
	"fashiond/jobs/redistest"
	"fashiond/pipelines"
	"fashiond/spec"
	"fashiond/storage"
)

// presignValidity is the presigned URL validity of TestPresignAtRead.
const presignValidity = 2 * time.Second

// TestPresignAtRead: with a presigning S3 store (a real versitygw server),
// a job's output URL and a saved model's image URL are signed when they are
// read: after the first URL expired, reading the job and the saved model
// again gives URLs that work. The records keep blob keys, not URLs.
func TestPresignAtRead(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.MakeBucket(t, "jobs-presign")
	st, err := storage.NewS3(ctx, storage.S3Options{Bucket: "jobs-presign", Endpoint: srv.Endpoint, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Lookup: storage.LookupPath, Presign: presignValidity})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := Open(ctx, Options{RedisURL: redistest.Start(t), Store: st, JanitorInterval: -1, Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	key, err := svc.CreateKey(ctx, "presign", 5)
	if err != nil {
		t.Fatal(err)
	}
	owner := OwnerOf(key)
	w, err := NewWorker(svc, pipelines.NewRegistry(&gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8}), pipelinetest.Loader{},
		WorkerOptions{ShutdownTimeout: time.Second, Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown()
	j, err := svc.Submit(ctx, SubmitRequest{Owner: owner, Model: spec.ModelTryOn, Cost: 1, Inputs: &spec.TryOnInputs{}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, svc: svc, owner: owner}
	first := e.wait(j.ID, "succeeded", func(j *Job) bool { return terminal(j.Status) })
	if first.Status != StatusSucceeded || len(first.Output) != 1 {
		t.Fatalf("job %+v", first)
	}
	saved, err := svc.Studio().Save(ctx, owner, pipelines.SavedModel{Name: "m"}, image.NewGray(image.Rect(0, 0, 4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{first.Output[0], saved.ImageURL} {
		if code := getCode(t, u); code != 200 || !strings.Contains(u, "X-Amz-Signature=") {
			t.Fatalf("fresh URL %s: %d, want a presigned URL that works", u, code)
		}
	}
	raw, _ := svc.rdb.HGet(ctx, rdb.KeyJob(j.ID), rdb.FieldOutput).Result()
	if raw != `["`+blobRef+OutputKey(j.ID, 0, "jpg")+`"]` {
		t.Errorf("record output %s, want the blob key", raw)
	}
	time.Sleep(presignValidity + time.Second)
	if code := getCode(t, first.Output[0]); code != http.StatusForbidden {
		t.Fatalf("the first URL after its expiry: %d, want 403", code)
	}
	again, err := svc.Get(ctx, owner, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.GetSaved(ctx, owner, saved.ID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := svc.ListSaved(ctx, owner)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListSaved: %v %v", list, err)
	}
	for name, u := range map[string]string{"job output": again.Output[0], "saved model": got.ImageURL, "saved list": list[0].ImageURL} {
		if code := getCode(t, u); code != 200 {
			t.Errorf("%s read after the first URL expired: GET %s: %d, want 200", name, u, code)
		}
	}
}

// getCode GETs u and returns the status code.
func getCode(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
