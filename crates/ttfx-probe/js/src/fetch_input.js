// What a `fetch(input, init)` call asks for: its absolute URL, method and abort signal.

export function inputUrl(input) {
  try {
    const raw = typeof input === "string" || input instanceof URL ? String(input) : input.url;
    return new URL(raw, globalThis.location && location.href).href;
  } catch (_) {
    return "";
  }
}

export function inputMethod(input, init) {
  const method = (init && init.method) || (input && typeof input === "object" && input.method);
  return typeof method === "string" ? method.toUpperCase() : "GET";
}

export const inputSignal = (input, init) => (init && init.signal) || (input && typeof input === "object" && input.signal) || null;
