// The SDK's HTTP client with STRIPE_TIMEOUT_SECONDS as a deadline for each attempt's whole
// exchange (connect, headers and body), not the idle timeout Node's socket timeout is: a Stripe
// (or a proxy in front of it) trickling its answer a byte at a time resets an idle timer forever,
// and the call would outlive the Idempotency-Key lease, which is sized by this timeout (client.ts). Otherwise as the SDK's own Node client: keep-alive agents, and
// the same errors, so the SDK's retries and our classification (stripe-calls.ts) see no difference.
import type { IncomingMessage } from 'node:http';
import { Stripe } from './sdk.js';

// Not `import 'node:http'`: see sdk.ts; the built-in modules themselves are what we need.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

export class DeadlineHttpClient extends Stripe.HttpClient {
  override getClientName(): string {
    return 'node';
  }

  override makeRequest(
    host: string,
    port: string,
    path: string,
    method: string,
    headers: Record<string, string | number | string[]>,
    requestData: string,
    protocol: string,
    timeout: number,
  ): Promise<DeadlineHttpClientResponse> {
    const insecure = protocol === 'http';
    return new Promise((resolve, reject) => {
      const request = (insecure ? http : https).request({
        host,
        port,
        path,
        method,
        headers,
        agent: insecure ? agents.http : agents.https,
        ciphers: 'DEFAULT:!aNULL:!eNULL:!LOW:!EXPORT:!SSLv2:!MD5',
      });
      let timedOut = false;
      const deadline = setTimeout(() => {
        timedOut = true;
        request.destroy(Stripe.HttpClient.makeTimeoutError());
      }, timeout);
      // 'close' comes once the response is read to its end, or the exchange failed.
      request.once('close', () => clearTimeout(deadline));
      request.once('response', (response) => resolve(new DeadlineHttpClientResponse(response, () => timedOut)));
      request.once('error', reject);
      request.end(requestData);
    });
  }
}

class DeadlineHttpClientResponse extends Stripe.HttpClientResponse {
  constructor(
    private readonly response: IncomingMessage,
    private readonly timedOut: () => boolean,
  ) {
    super(response.statusCode ?? 0, response.headers as Record<string, string>);
  }

  override getRawResponse(): IncomingMessage {
    return this.response;
  }

  override toStream(streamCompleteCallback: () => void): IncomingMessage {
    this.response.once('end', () => streamCompleteCallback());
    return this.response;
  }

  override toJSON(): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let body = '';
      const bodyError = (error: unknown) => Stripe.HttpClient.makeResponseBodyError(this.timedOut() ? Stripe.HttpClient.makeTimeoutError() : error);
      this.response.setEncoding('utf8');
      this.response.on('data', (chunk: string) => (body += chunk));
      this.response.once('error', (error) => reject(bodyError(error)));
      // A response cut before its end does not always emit 'error'.
      this.response.once('close', () => this.response.complete || reject(bodyError(null)));
      this.response.once('end', () => {
        try {
          resolve(this._parseResponseBody(body));
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
  }
}
