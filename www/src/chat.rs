//! The chat-style view: each request is a prompt and a reply that streams in, rendered
//! as a product would render it. Every string here is a text node, never markup.

use leptos::prelude::*;

use crate::lab;
use crate::reply::ReplySink;

/// One exchange in the chat view.
#[derive(Clone)]
pub struct Message {
    pub key: u64,
    pub target: String,
    pub prompt: String,
    pub text: RwSignal<String>,
    pub reasoning: RwSignal<String>,
    pub error: RwSignal<Option<String>>,
}

impl Message {
    pub fn new(key: u64, target: String, prompt: String) -> Message {
        Message {
            key,
            target,
            prompt,
            text: RwSignal::new(String::new()),
            reasoning: RwSignal::new(String::new()),
            error: RwSignal::new(None),
        }
    }

    /// The id of the reply element the probe watches.
    pub fn reply_id(&self) -> String {
        format!("reply-{}", self.key)
    }
}

impl ReplySink for Message {
    fn text(&self, piece: &str) {
        self.text.update(|t| t.push_str(piece));
    }
    fn reasoning(&self, piece: &str) {
        self.reasoning.update(|t| t.push_str(piece));
    }
    fn error(&self, message: &str) {
        self.error.update(|e| {
            let joined = match e.take() {
                Some(old) => format!("{old}; {message}"),
                None => message.to_owned(),
            };
            *e = Some(joined);
        });
    }
}

/// The conversation, newest last.
#[component]
pub fn ChatView() -> impl IntoView {
    let lab = lab();
    view! {
        <div class="chat" id="chat">
            <For each=move || lab.messages.get() key=|m| m.key let:message>
                <Exchange message/>
            </For>
        </div>
    }
}

#[component]
fn Exchange(message: Message) -> impl IntoView {
    let Message {
        text,
        reasoning,
        error,
        ..
    } = message.clone();
    view! {
        <div class="exchange">
            <div class="bubble user">
                <span class="who">{message.target.clone()}</span>
                {message.prompt.clone()}
            </div>
            <Show when=move || reasoning.with(|r| !r.is_empty())>
                <details class="thinking">
                    <summary>"thinking"</summary>
                    <p>{move || reasoning.get()}</p>
                </details>
            </Show>
            // The probe watches this element: only visible answer text goes in it.
            <div class="bubble assistant" id=message.reply_id()>{move || text.get()}</div>
            {move || error.get().map(|e| view! { <p class="error">{e}</p> })}
        </div>
    }
}
