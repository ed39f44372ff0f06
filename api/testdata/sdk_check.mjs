// Drives fashiond's API with the official fashn TypeScript SDK (installed by
// api/sdk_test.go next to a copy of this file). Env: FASHIOND_BASE_URL,
// FASHIOND_API_KEY, FASHIOND_POOR_KEY. Prints one JSON line; exits 1 on the
// first failed assertion.
import Fashn, { BadRequestError, AuthenticationError, NotFoundError, APIError } from 'fashn';

const baseURL = process.env.FASHIOND_BASE_URL;
const apiKey = process.env.FASHIOND_API_KEY;
const img = 'https://example.com/person.jpg';
const garment = 'https://example.com/garment.png';

function check(cond, msg, extra) {
  if (!cond) {
    console.error('FAIL: ' + msg + (extra === undefined ? '' : ' :: ' + JSON.stringify(extra)));
    process.exit(1);
  }
}

async function expectError(promise, cls, status, code, field) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof cls, `error class ${cls.name}`, { got: e?.constructor?.name, msg: String(e) });
    check(e.status === status, `status ${status}`, e.status);
    check(e.error?.code === code, `code ${code}`, e.error);
    if (field !== undefined) check(e.error?.field === field, `field ${field}`, e.error);
    // The SDK builds its message from the body's "message" field.
    check(e.message === `${status} ${e.error.error}`, 'SDK message carries the sentence', e.message);
    return e;
  }
  check(false, `expected ${cls.name} ${status} ${code}`);
}

const client = new Fashn({ apiKey, baseURL, maxRetries: 0, timeout: 20000 });
const out = {};

// run: webhook_url goes in the query; body is {model_name, inputs}.
const run = await client.predictions.run({
  model_name: 'tryon',
  inputs: { personImage: img, garmentImage: garment, accuracy: 'high' },
  webhook_url: 'https://hooks.example.com/fashn?x=1',
});
check(typeof run.id === 'string' && run.id.length === 36, 'run id', run);
check(run.status === 'starting' && run.error === null && run.output === null, 'run starting/null/null', run);
out.runId = run.id;

// run with the raw response: 201 for pose-control, credits header.
const { data: pc, response: pcResp } = await client.predictions
  .run({
    model_name: 'pose-control',
    inputs: {
      modelImage: img,
      poses: [
        { type: 'custom', text: 'arms crossed' },
        { type: 'template', cdnUrl: garment, title: 'walk' },
        { type: 'custom', text: 'hands on hips' },
      ],
      quality: '4k',
    },
  })
  .withResponse();
check(pcResp.status === 201, 'pose-control 201', pcResp.status);
check(pcResp.headers.get('x-credits-used') === '15', 'x-credits-used 15', pcResp.headers.get('x-credits-used'));
check(pc.status === 'starting', 'pose-control starting', pc);

// status
const st = await client.predictions.status(run.id);
check(st.id === run.id && st.status === 'succeeded', 'status succeeded', st);
check(Array.isArray(st.output) && st.output.length === 1 && st.output[0].includes(run.id), 'status output', st);
const pcSt = await client.predictions.status(pc.id);
check(pcSt.output.length === 3, 'pose-control: one output per pose', pcSt);

// subscribe: polls until a status other than starting/in_queue/processing.
let enqueued = null;
const updates = [];
const sub = await client.predictions.subscribe({
  model_name: 'prompt-tryon',
  inputs: { personImage: img, prompt: 'a red silk dress', quality: '2k', sampleCount: 2 },
  pollInterval: 20,
  timeout: 20000,
  onEnqueued: (id) => (enqueued = id),
  onQueueUpdate: (s) => updates.push(s.status),
});
check(sub.status === 'success', 'prompt-tryon completes with success', sub);
check(sub.id === enqueued, 'onEnqueued id', { sub, enqueued });
check(sub.creditsUsed === 6, 'creditsUsed from x-fashn-credits-used', sub);
check(sub.output.length === 2 && updates.at(-1) === 'success', 'subscribe output/updates', { sub, updates });
out.subscribe = { status: sub.status, creditsUsed: sub.creditsUsed, outputs: sub.output.length };

const vid = await client.predictions.subscribe({
  model_name: 'image-to-video',
  inputs: { imageUrl: img, duration: 8, aspectRatio: '16:9' },
  pollInterval: 20,
});
check(vid.status === 'succeeded' && vid.creditsUsed === 12 && vid.output[0].endsWith('.mp4'), 'video', vid);

const failed = await client.predictions.subscribe({
  model_name: 'image-to-video',
  inputs: { imageUrl: img, prompt: 'fail' },
  pollInterval: 20,
});
check(failed.status === 'error' && typeof failed.error === 'string' && failed.output === null, 'failed job', failed);

// Errors map to the SDK's classes, with our body as e.error.
await expectError(
  client.predictions.run({ model_name: 'tryon', inputs: { personImage: img } }),
  BadRequestError, 400, 'missing_field', 'inputs.garmentImage');
await expectError(
  client.predictions.run({ model_name: 'tryon-v1.6', inputs: { model_image: img, garment_image: garment } }),
  BadRequestError, 400, 'unknown_model', 'model_name');
await expectError(
  client.predictions.run({ model_name: 'model-create', inputs: { type: 'upload', name: 'x', imageBase64: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB' } }),
  BadRequestError, 400, 'missing_data_uri_prefix', 'inputs.imageBase64');
await expectError(client.predictions.status('00000000-0000-4000-8000-000000000000'), NotFoundError, 404, 'not_found');
const bad = new Fashn({ apiKey: 'not-a-key', baseURL, maxRetries: 0 });
await expectError(bad.predictions.status(run.id), AuthenticationError, 401, 'unauthorized');
const poor = new Fashn({ apiKey: process.env.FASHIOND_POOR_KEY, baseURL, maxRetries: 0 });
const e402 = await expectError(
  poor.predictions.run({ model_name: 'image-to-video', inputs: { imageUrl: img } }),
  APIError, 402, 'insufficient_credits');
check(e402.error.cost === 9 && e402.error.balance === 2, '402 body', e402.error);

out.ok = true;
console.log(JSON.stringify(out));
