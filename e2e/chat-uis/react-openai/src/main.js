// A chat UI as a React app streams: through the official `openai` client, pointed at
// the simulator (`baseURL`), `for await` over the chunks of
// `client.chat.completions.create({ stream: true })`. Plain `React.createElement`, so
// the build needs Vite alone (no JSX plugin).
import { createElement as h, StrictMode, useState } from "react";
import { createRoot } from "react-dom/client";
import OpenAI from "openai";

// The page's query: `api` is the simulator's base for one profile
// (http://HOST:PORT/sim/PROFILE); every other parameter is sent with each request as a
// query parameter (the simulator's overrides). See ../README.md.
const params = new URLSearchParams(location.search);
const api = (params.get("api") || "").replace(/\/+$/, "");
const defaultQuery = Object.fromEntries([...params].filter(([k]) => k !== "api"));

const client = new OpenAI({
  baseURL: `${api}/v1`,
  apiKey: "sk-test-not-a-key",
  dangerouslyAllowBrowser: true,
  defaultQuery,
  // A failed request shows as failed, not silently sent again.
  maxRetries: 0,
});

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
      const stream = await client.chat.completions.create({
        model: "ttfx-sim",
        messages: history,
        stream: true,
      });
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (delta) setMessages((ms) => withLast(ms, (m) => ({ ...m, content: m.content + delta })));
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
