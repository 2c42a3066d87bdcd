// The engine the probe runs in, from the user agent: once per probe.

export function engineInfo() {
  const ua = (globalThis.navigator && navigator.userAgent) || "";
  let m;
  if ((m = ua.match(/Firefox\/([\d.]+)/))) return ["gecko", m[1], ua];
  if ((m = ua.match(/(?:Chrome|Chromium|HeadlessChrome)\/([\d.]+)/))) return ["chromium", m[1], ua];
  if ((m = ua.match(/AppleWebKit\/([\d.]+)/))) return ["webkit", m[1], ua];
  return [null, null, ua];
}
