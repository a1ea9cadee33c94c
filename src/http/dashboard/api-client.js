// @ts-check
// Calls to /admin/api/*, with the session cookie. A 401 means the session has ended: the page is
// reloaded, which shows the sign-in form.

/**
 * The answer of a call to /admin/api, once it is known to be a success.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<Response>}
 */
export async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch('/admin/api' + path, { method, headers, credentials: 'same-origin', body: body === undefined ? null : JSON.stringify(body) });
  if (response.status === 401) {
    location.reload();
    throw new Error('signed out');
  }
  if (!response.ok) {
    // The server's reason, when it gave one: a 404 says the event is gone, a 403 what to set.
    /** @type {{ error?: unknown }} */
    const body = await response.json().catch(() => ({}));
    throw new Error(method + ' ' + path + ' answered ' + response.status + (typeof body.error === 'string' ? ': ' + body.error : ''));
  }
  return response;
}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  return (await call(method, path, body)).json();
}
