// The probe's switch: a fault inside the probe turns it off for the page, and every later
// run passes the app's data through and settles at once with the reason.

export const describe = (e) => String((e && e.message) || e);

// Set once the probe failed inside (read, never assigned, by the other modules).
export let disabled = null;
export function disable(reason) {
  disabled = disabled || reason;
}
