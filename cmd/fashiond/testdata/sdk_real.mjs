// Runs a real try-on job on a running fashiond with the official fashn SDK,
// unchanged but for the base URL. Env: FASHIOND_BASE_URL, FASHIOND_API_KEY,
// PERSON, GARMENT (file paths). Prints the final prediction as JSON.
import Fashn from 'fashn';
import { readFileSync } from 'node:fs';

const uri = (p, mt) => `data:${mt};base64,` + readFileSync(p).toString('base64');
const client = new Fashn({ apiKey: process.env.FASHIOND_API_KEY, baseURL: process.env.FASHIOND_BASE_URL, maxRetries: 0 });
const res = await client.predictions.subscribe({
  model_name: 'tryon',
  inputs: { personImage: uri(process.env.PERSON, 'image/webp'), garmentImage: uri(process.env.GARMENT, 'image/png') },
  pollInterval: 300,
  timeout: 120000,
});
if (res.status !== 'succeeded' || !Array.isArray(res.output) || res.output.length !== 1) {
  console.error('FAIL: ' + JSON.stringify(res));
  process.exit(1);
}
const img = await fetch(res.output[0]);
if (img.status !== 200 || !(img.headers.get('content-type') || '').startsWith('image/')) {
  console.error('FAIL: output ' + res.output[0] + ' answered ' + img.status);
  process.exit(1);
}
console.log(JSON.stringify({ id: res.id, status: res.status, creditsUsed: res.creditsUsed }));
