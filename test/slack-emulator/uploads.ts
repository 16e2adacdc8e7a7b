import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FileStore } from './file-store.ts';
import type { Recorder } from './recorder.ts';
import { parseMultipart, readRawBody } from './request-body.ts';

/**
 * The `upload_url` of `files.getUploadURLExternal`. WebClient posts the bytes as multipart
 * field `body`; Slack also takes them raw. No token is needed: the URL itself is the credential.
 */
export async function handleUpload(
  req: IncomingMessage,
  res: ServerResponse,
  fileId: string,
  files: FileStore,
  recorder: Recorder,
): Promise<void> {
  const raw = await readRawBody(req);
  recorder.traffic(raw.toString('utf8'));
  const contentType = req.headers['content-type'] ?? '';
  let bytes = raw;
  if (contentType.toLowerCase().startsWith('multipart/form-data')) {
    const field = (await parseMultipart(raw, contentType)).get('body');
    if (field === null) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('missing body field');
      return;
    }
    bytes = typeof field === 'string' ? Buffer.from(field) : Buffer.from(await field.arrayBuffer());
  }
  if (!files.receive(fileId, bytes)) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('unknown upload');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain' }).end(`OK - ${bytes.length}`);
}
