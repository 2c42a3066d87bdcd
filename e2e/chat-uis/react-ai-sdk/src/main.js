// A chat UI on the Vercel AI SDK: `streamText` of `ai` in the browser, through
// `@ai-sdk/openai-compatible` pointed at the simulator (`baseURL`), the reply's text
// appended part by part from `fullStream`. Plain `React.createElement`, so the build needs
// Vite alone (no JSX plugin).
import { createElement as h, StrictMode, useState } from "react";
import { createRoot } from "react-dom/client";
import { streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

// The page's query: `api` is the simulator's base for one profile
// (http://HOST:PORT/sim/PROFILE); every other parameter is sent with each request as a
// query parameter (the simulator's overrides). See ../README.md.
const params = new URLSearchParams(location.search);
const api = (params.get("api") || "").replace(/\/+$/, "");
const queryParams = Object.fromEntries([...params].filter(([k]) => k !== "api"));

const provider = createOpenAICompatible({
  name: "ttfx-sim",
  baseURL: `${api}/v1`,
  apiKey: "sk-test-not-a-key",
  queryParams,
});
const model = provider.chatModel("ttfx-sim");

/// `messages` with its last one changed by `change`.
const withLast = (messages, change) => [...messages.slice(0, -1), change(messages[messages.length - 1])];

function App() {
  const [messages, setMessages] = useState([]);
  const [draft, setDraft] = useState("");
  const [busy, setBusy] = useState(false);

  async function submit() {
    const text = draft.trim();
    if (!text || busy) return;
    setDraft("");
    setBusy(true);
    // The conversation so far (failed replies left out), then the new message.
    const history = messages
      .filter((m) => m.state !== "error")
      .map(({ role, content }) => ({ role, content }));
    history.push({ role: "user", content: text });
    setMessages((ms) => [
      ...ms,
      { role: "user", content: text, state: "done" },
      { role: "assistant", content: "", state: "streaming" },
    ]);
    try {
      const result = streamText({
        model,
        messages: history,
        // A failed request shows as failed, not silently sent again.
        maxRetries: 0,
      });
      // `fullStream`, not `textStream`: a failed request is an `error` part there, where
      // `textStream` would just end and leave an empty reply that looks done.
      for await (const part of result.fullStream) {
        if (part.type === "text-delta") {
          setMessages((ms) => withLast(ms, (m) => ({ ...m, content: m.content + part.text })));
        } else if (part.type === "error") {
          throw part.error;
        }
      }
      setMessages((ms) => withLast(ms, (m) => ({ ...m, state: "done" })));
    } catch (e) {
      setMessages((ms) => withLast(ms, (m) => ({ ...m, state: "error", error: String(e) })));
    } finally {
      setBusy(false);
    }
  }

  return h(
    "main",
    null,
    h(
      "ol",
      { id: "messages", "aria-live": "polite" },
      messages.map((m, i) =>
        h(
          "li",
          { key: i, className: `message ${m.role}`, "data-state": m.state, "data-error": m.error },
          m.content,
        ),
      ),
    ),
    h(
      "form",
      {
        id: "composer",
        onSubmit: (e) => {
          e.preventDefault();
          submit();
        },
      },
      h("textarea", {
        id: "prompt",
        placeholder: "Message",
        "aria-label": "Message",
        value: draft,
        onChange: (e) => setDraft(e.target.value),
        onKeyDown: (e) => {
          // Enter sends, Shift+Enter is a new line.
          if (e.key === "Enter" && !e.shiftKey) {
            e.preventDefault();
            submit();
          }
        },
      }),
      h("button", { id: "send", type: "submit", disabled: busy }, "Send"),
    ),
  );
}

createRoot(document.getElementById("root")).render(h(StrictMode, null, h(App)));
