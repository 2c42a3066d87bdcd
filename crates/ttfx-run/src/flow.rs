//! A user flow for inject mode: the steps a person takes in a chat UI (open the page,
//! type, submit, wait for the reply, type the next prompt, …), from `--type`/`--submit`
//! or a TOML flow file (`--flow`, docs/run.md). Every `wait = "reply"` ends one measured
//! turn.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A flow file that cannot be used: the file, then what.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("cannot read flow {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("flow {}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: FlowProblem },
}

/// What is wrong in a flow's text: the step (counted from 1), then what.
#[derive(Debug, thiserror::Error)]
pub enum FlowProblem {
    /// Not TOML, or not a flow's keys: the parser's message.
    #[error("{0}")]
    Toml(String),
    #[error("step {step}: give exactly one of open, type, submit, wait")]
    NotOneAction { step: usize },
    #[error("step {step}: `into` goes with `type`")]
    IntoWithoutType { step: usize },
    #[error("step {step}: open needs an http(s):// URL")]
    OpenNotHttp { step: usize },
    #[error("step {step}: wait = \"reply\" is the one wait, got {got:?}")]
    UnknownWait { step: usize, got: Option<String> },
    #[error("step {step}: wait = \"reply\" needs a submit before it in its turn")]
    WaitWithoutSubmit { step: usize },
    #[error("the last submit has no wait = \"reply\" after it: its turn would not be measured")]
    LastSubmitUnwaited,
    #[error("the flow measures no turn: it needs submit and then wait = \"reply\"")]
    NoTurn,
}

/// One step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Load a URL (a fresh page: the probe is injected before its scripts).
    Open(String),
    /// Type text into the element `into` (CSS), or the first visible prompt field.
    Type { text: String, into: Option<String> },
    /// Click the element (CSS), or press Enter in the prompt's field.
    Submit(Option<String>),
    /// Wait for the reply to the last submit to finish: one measured turn.
    WaitReply,
}

/// The steps, checked: a flow opens a page first, and every turn submits before it
/// waits for its reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub steps: Vec<Step>,
}

/// What a flow file's `[[step]]` may say: exactly one action per step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    open: Option<String>,
    #[serde(rename = "type")]
    type_text: Option<String>,
    into: Option<String>,
    submit: Option<String>,
    wait: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    step: Vec<StepFile>,
}

/// `submit = "enter"` presses Enter; anything else is a CSS selector to click.
const ENTER: &str = "enter";

impl Flow {
    /// The one-turn flow of `--url`, `--type` and `--submit`: open, type the prompt,
    /// submit, wait for the reply.
    pub fn single(url: &str, prompt: &str, into: Option<&str>, submit: Option<&str>) -> Flow {
        Flow {
            steps: vec![
                Step::Open(url.to_owned()),
                Step::Type {
                    text: prompt.to_owned(),
                    into: into.map(str::to_owned),
                },
                Step::Submit(submit.map(str::to_owned)),
                Step::WaitReply,
            ],
        }
    }

    /// A flow file; `url` (from `--url`) opens it when its first step is not `open`.
    pub fn read(path: &Path, url: &str) -> Result<Flow, FlowError> {
        let text = std::fs::read_to_string(path).map_err(|cause| FlowError::Read {
            path: path.to_owned(),
            cause,
        })?;
        Flow::parse(&text, url).map_err(|problem| FlowError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    pub fn parse(text: &str, url: &str) -> Result<Flow, FlowProblem> {
        let file: FlowFile =
            toml::from_str(text).map_err(|e| FlowProblem::Toml(e.message().to_owned()))?;
        let mut steps = Vec::new();
        for (i, s) in file.step.into_iter().enumerate() {
            let n = i + 1;
            let actions = [
                s.open.is_some(),
                s.type_text.is_some(),
                s.submit.is_some(),
                s.wait.is_some(),
            ]
            .iter()
            .filter(|a| **a)
            .count();
            if actions != 1 {
                return Err(FlowProblem::NotOneAction { step: n });
            }
            if s.into.is_some() && s.type_text.is_none() {
                return Err(FlowProblem::IntoWithoutType { step: n });
            }
            let step = if let Some(url) = s.open {
                if !ttfx_core::target::is_http(&url) {
                    return Err(FlowProblem::OpenNotHttp { step: n });
                }
                Step::Open(url)
            } else if let Some(text) = s.type_text {
                Step::Type { text, into: s.into }
            } else if let Some(target) = s.submit {
                Step::Submit((!target.eq_ignore_ascii_case(ENTER)).then_some(target))
            } else {
                match s.wait.as_deref() {
                    Some("reply") => Step::WaitReply,
                    other => {
                        return Err(FlowProblem::UnknownWait {
                            step: n,
                            got: other.map(str::to_owned),
                        });
                    }
                }
            };
            steps.push(step);
        }
        if !matches!(steps.first(), Some(Step::Open(_))) {
            steps.insert(0, Step::Open(url.to_owned()));
        }
        let flow = Flow { steps };
        flow.check()?;
        Ok(flow)
    }

    /// Whether the only page the flow opens is `url`, as its first step: a flow file
    /// without `open` steps, given one page's URL.
    pub fn opens_only(&self, url: &str) -> bool {
        let opens = self.steps.iter().filter(|s| matches!(s, Step::Open(_)));
        matches!(self.steps.first(), Some(Step::Open(u)) if u == url) && opens.count() == 1
    }

    /// Every wait follows a submit of its own turn; a flow measures at least one turn.
    fn check(&self) -> Result<(), FlowProblem> {
        let mut submitted = false;
        let mut turns = 0;
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                Step::Submit(_) => submitted = true,
                Step::WaitReply if !submitted => {
                    return Err(FlowProblem::WaitWithoutSubmit { step: i + 1 });
                }
                Step::WaitReply => {
                    submitted = false;
                    turns += 1;
                }
                Step::Open(_) => submitted = false,
                Step::Type { .. } => {}
            }
        }
        if submitted {
            return Err(FlowProblem::LastSubmitUnwaited);
        }
        if turns == 0 {
            return Err(FlowProblem::NoTurn);
        }
        Ok(())
    }

    /// How many turns one pass through the flow measures.
    pub fn turns(&self) -> usize {
        self.steps.iter().filter(|s| **s == Step::WaitReply).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_turn_flow_reads_in_order_and_opens_the_url_first() {
        let flow = Flow::parse(
            r##"
            [[step]]
            type = "Hello"
            into = "#prompt"
            [[step]]
            submit = "#send"
            [[step]]
            wait = "reply"
            [[step]]
            type = "And then?"
            [[step]]
            submit = "Enter"
            [[step]]
            wait = "reply"
            "##,
            "http://127.0.0.1:9/chat",
        )
        .unwrap();
        assert_eq!(flow.turns(), 2);
        assert_eq!(flow.steps[0], Step::Open("http://127.0.0.1:9/chat".into()));
        assert_eq!(
            flow.steps[1],
            Step::Type {
                text: "Hello".into(),
                into: Some("#prompt".into())
            }
        );
        assert_eq!(flow.steps[2], Step::Submit(Some("#send".into())));
        assert_eq!(flow.steps[5], Step::Submit(None));
        assert_eq!(flow.steps[6], Step::WaitReply);
    }

    #[test]
    fn a_flow_that_would_measure_nothing_or_guess_is_refused() {
        let url = "http://x/";
        let err = |text: &str| format!("{:#}", Flow::parse(text, url).unwrap_err());
        assert!(err("[[step]]\nwait = \"reply\"").contains("needs a submit"));
        assert!(err("[[step]]\ntype = \"hi\"\nsubmit = \"#s\"").contains("exactly one"));
        assert!(err("[[step]]\nsubmit = \"#s\"").contains("no wait"));
        assert!(err("[[step]]\ntype = \"hi\"").contains("no turn"));
        assert!(err("[[step]]\nwait = \"idle\"").contains("is the one wait"));
        assert_eq!(
            err("[[step]]\nwait = \"idle\""),
            "step 1: wait = \"reply\" is the one wait, got Some(\"idle\")"
        );
        assert!(err("[[step]]\nopen = \"file:///etc\"").contains("http(s)"));
        assert!(err("[[step]]\nclick = \"#s\"").contains("unknown field"));
        assert!(
            err("[[step]]\ninto = \"#p\"\nsubmit = \"#s\"").contains("`into` goes with `type`")
        );
    }

    #[test]
    fn the_flags_make_a_one_turn_flow() {
        let flow = Flow::single("http://x/", "Hi", None, Some("button"));
        flow.check().unwrap();
        assert_eq!(flow.turns(), 1);
    }
}
