/**
 * An endpoint as logs, metrics, the dashboard and the API show it: scheme, host and path. Its query
 * may carry a token (?token=), which must not reach a log line or a metric label.
 */
export function endpointLabel(url: string): string {
  const { origin, pathname } = new URL(url);
  return origin + pathname;
}
