// Render timing: `first_dom` (MutationObserver), `first_paint` (when the frame holding
// the text was presented: Element Timing's `presentationTime`, else its `renderTime`,
// else the start of the frame after the one that rendered the text) and `paint_time`
// (Element Timing's `paintTime`, where exposed).

// Element Timing entries kept per watch: the first paint at or after `first_dom` is the
// one wanted, and a long reply must not grow this list.
const MAX_PAINTS = 16;
const ELEMENT_TIMING = typeof PerformanceObserver !== "undefined" && (PerformanceObserver.supportedEntryTypes || []).includes("element");

export const isElement = (v) => typeof Element !== "undefined" && v instanceof Element;

function markPainted(element) {
  if (element && element.setAttribute && !element.hasAttribute("elementtiming")) element.setAttribute("elementtiming", "ttfx-reply");
}

export class RenderWatch {
  constructor(element) {
    // Chromium reports a text paint once per element, and only for elements marked before
    // they paint: mark the element now and the parents of the first text at first_dom.
    markPainted(element);
    this.notBefore = null;
    this.firstDom = null;
    this.paints = [];
    this.frame = null;
    let baseline = element.textContent;
    this.observer = new MutationObserver((records, observer) => {
      if (this.firstDom !== null) return;
      const at = performance.now();
      const text = element.textContent;
      if (this.notBefore === null || at < this.notBefore) {
        baseline = text;
        return;
      }
      if (!text.trim() || text === baseline) return;
      this.firstDom = at;
      for (const record of records) {
        for (const node of [record.target, ...record.addedNodes]) markPainted(node.nodeType === 3 ? node.parentElement : node);
      }
      // The first requestAnimationFrame after the change runs in the frame that renders
      // it; the compositor draws that frame in the next one, whose rAF timestamp is its
      // start (in Chromium the screencast stamps 36 of 40 changes exactly there,
      // docs/fidelity.md): the paint estimate where there is no Element Timing. A
      // timestamp before first_dom (a frame that began before the change) is no estimate
      // of it: the callback's own clock read is taken then. Hidden pages get no frames,
      // so the estimate never comes and the report says so.
      if (typeof requestAnimationFrame === "function") {
        requestAnimationFrame(() =>
          requestAnimationFrame((next) => {
            if (this.frame === null) this.frame = next >= at ? next : performance.now();
          }),
        );
      }
      // The rest of the reply streams in with no probe work per insertion.
      observer.disconnect();
    });
    this.observer.observe(element, { childList: true, characterData: true, subtree: true });
    if (ELEMENT_TIMING) {
      this.paintObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          if (entry.element && element.contains(entry.element) && entry.renderTime > 0 && this.paints.length < MAX_PAINTS) {
            // Chromium 156 exposes both halves of renderTime: paintTime (the rendering
            // step) and presentationTime (the frame shown, which renderTime then equals).
            this.paints.push([entry.renderTime, entry.paintTime > 0 ? entry.paintTime : null, entry.presentationTime > 0 ? entry.presentationTime : null]);
          }
        }
      });
      this.paintObserver.observe({ type: "element", buffered: true });
    }
  }

  // [first_paint, method, paint_time or null] of the first paint at or after first_dom.
  firstPaint() {
    if (this.firstDom === null) return null;
    let first = null;
    for (const p of this.paints) if (p[0] >= this.firstDom && (first === null || p[0] < first[0])) first = p;
    if (first !== null) return first[2] !== null ? [first[2], "presentation_time", first[1]] : [first[0], "element_timing", null];
    return this.frame === null ? null : [this.frame, "raf_next_frame", null];
  }

  settled() {
    if (this.firstDom === null) return false;
    return ELEMENT_TIMING ? this.paints.some((p) => p[0] >= this.firstDom) : this.frame !== null;
  }

  stop() {
    this.observer.disconnect();
    if (this.paintObserver) this.paintObserver.disconnect();
  }
}
