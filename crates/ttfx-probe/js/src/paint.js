// Render timing: `first_dom` (MutationObserver) and `first_paint` (Element Timing, else
// the frame after `first_dom`).

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
      // requestAnimationFrame runs just before the frame is rendered, and a message posted
      // from it runs just after: the paint estimate where there is no Element Timing.
      // Hidden pages get no frames, so the estimate never comes and the report says so.
      if (typeof requestAnimationFrame === "function") {
        requestAnimationFrame(() => {
          const channel = new MessageChannel();
          channel.port1.onmessage = () => {
            channel.port1.close();
            this.frame = this.frame || performance.now();
          };
          channel.port2.postMessage(0);
        });
      }
      // The rest of the reply streams in with no probe work per insertion.
      observer.disconnect();
    });
    this.observer.observe(element, { childList: true, characterData: true, subtree: true });
    if (ELEMENT_TIMING) {
      this.paintObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          if (entry.element && element.contains(entry.element) && entry.renderTime > 0 && this.paints.length < MAX_PAINTS) this.paints.push(entry.renderTime);
        }
      });
      this.paintObserver.observe({ type: "element", buffered: true });
    }
  }

  // [time, method] of the first paint at or after first_dom.
  firstPaint() {
    if (this.firstDom === null) return null;
    const after = this.paints.filter((t) => t >= this.firstDom);
    if (after.length > 0) return [Math.min(...after), "element_timing"];
    return this.frame === null ? null : [this.frame, "raf_estimate"];
  }

  settled() {
    if (this.firstDom === null) return false;
    return ELEMENT_TIMING ? this.paints.some((t) => t >= this.firstDom) : this.frame !== null;
  }

  stop() {
    this.observer.disconnect();
    if (this.paintObserver) this.paintObserver.disconnect();
  }
}
