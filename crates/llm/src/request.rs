//! OpenAI-compatible request bodies, from a prompts file or generated prompts.

use std::io::BufRead;

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// Which OpenAI-compatible endpoint a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Api {
    /// `/v1/chat/completions`: `messages` in, `choices[0].delta.content` out.
    #[default]
    Chat,
    /// The legacy `/v1/completions`: `prompt` in, `choices[0].text` out.
    Completions,
}

impl Api {
    /// The endpoint's path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
        }
    }

    /// `chat` or `completions`, as `--llm` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `chat` or `completions`.
impl std::str::FromStr for Api {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "chat" => Ok(Api::Chat),
            "completions" => Ok(Api::Completions),
            _ => Err(format!(
                "`{s}` is not an OpenAI-compatible API: expected chat or completions"
            )),
        }
    }
}

/// What a prompt asks.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptText {
    /// A text: the user's message (chat) or the prompt (completions).
    Text(String),
    /// Chat messages as the file gave them (an array of `{role, content}`): chat only
    /// ([`read_prompts`] refuses them for completions; a completions body built from them
    /// carries them as `messages`, which a server refuses).
    Messages(Value),
}

/// One prompt: its text and, if it says, its own output length.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The text or messages.
    pub text: PromptText,
    /// `max_tokens` for this prompt, over the run's.
    pub max_tokens: Option<u32>,
}

/// Why prompts could not be read, naming the place.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a prompt.
    #[error("{file}:{line}: {reason}")]
    Line {
        /// The file.
        file: String,
        /// Its line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The file holds no prompt.
    #[error("{file}: no prompts (a JSON object a line, with `prompt` or `messages`)")]
    Empty {
        /// The file.
        file: String,
    },
}

/// Reads the prompts file at `path` (see [`read_prompts`]), its errors naming it.
///
/// # Errors
/// The file cannot be opened or read, or is not a prompts file.
pub fn read_prompts_file(path: &std::path::Path, api: Api) -> Result<Vec<Prompt>, PromptError> {
    let file = path.display().to_string();
    let opened = std::fs::File::open(path).map_err(|source| PromptError::Io {
        file: file.clone(),
        source,
    })?;
    read_prompts(std::io::BufReader::new(opened), &file, api)
}

/// Reads a prompts file, JSON Lines: one object a line, empty lines skipped.
///
/// Fields read: `prompt` (a string), or `messages` (chat messages, an array of objects each
/// with a string `role`; chat only), exactly one of the two; and `max_tokens` (an integer,
/// optional), the output length to ask for this prompt over the run's. Other fields are
/// ignored, so a dataset's own lines serve as they are.
///
/// # Errors
/// A line that is not such an object, with its file and line number; a file with none.
pub fn read_prompts(
    reader: impl BufRead,
    file: &str,
    api: Api,
) -> Result<Vec<Prompt>, PromptError> {
    let mut prompts = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|source| PromptError::Io {
            file: file.to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let prompt = prompt_of(&line, api).map_err(|reason| PromptError::Line {
            file: file.to_string(),
            line: i + 1,
            reason,
        })?;
        prompts.push(prompt);
    }
    if prompts.is_empty() {
        return Err(PromptError::Empty {
            file: file.to_string(),
        });
    }
    Ok(prompts)
}

fn prompt_of(line: &str, api: Api) -> Result<Prompt, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut obj) = value else {
        return Err("expected a JSON object with `prompt` or `messages`".into());
    };
    let max_tokens = match obj.remove("max_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`max_tokens` is {v}: expected a positive integer"))?,
        ),
    };
    let text = match (obj.remove("prompt"), obj.remove("messages")) {
        (Some(Value::String(s)), None) => PromptText::Text(s),
        (Some(other), None) => return Err(format!("`prompt` is {other}: expected a string")),
        (None, Some(messages)) => {
            if api == Api::Completions {
                return Err("`messages` is for chat; /v1/completions takes a `prompt`".into());
            }
            let ok = messages.as_array().is_some_and(|m| {
                !m.is_empty()
                    && m.iter()
                        .all(|m| m.get("role").is_some_and(Value::is_string))
            });
            if !ok {
                return Err(
                    "`messages` must be a non-empty array of objects each with a string `role`"
                        .into(),
                );
            }
            PromptText::Messages(messages)
        }
        (Some(_), Some(_)) => return Err("both `prompt` and `messages`: give one".into()),
        (None, None) => return Err("neither `prompt` nor `messages`".into()),
    };
    Ok(Prompt { text, max_tokens })
}

/// Short common English words, each one token (with its leading space) in the common BPE
/// vocabularies (GPT's, Llama's): a generated prompt of N words is about N tokens.
const WORDS: [&str; 48] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no",
];

/// `count` prompts of `tokens` words each, drawn from a fixed list of one-token English words
/// with `seed`: about `tokens` tokens each (no tokenizer is involved: the server's
/// `usage.prompt_tokens` tells the exact count). Different prompts, so a server's prefix
/// cache does not answer them all from one.
pub fn generated_prompts(count: usize, tokens: usize, seed: u64) -> Vec<Prompt> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let mut text = String::with_capacity(tokens * 5);
            for i in 0..tokens {
                if i > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            }
            Prompt {
                text: PromptText::Text(text),
                max_tokens: None,
            }
        })
        .collect()
}

/// What every request of a run asks, beside its prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    /// Chat or completions.
    pub api: Api,
    /// `model`.
    pub model: String,
    /// `max_tokens`, unless a prompt gives its own; none lets the server decide.
    pub max_tokens: Option<u32>,
    /// `stream_options: {include_usage: true}`: the server's count of output tokens in a last
    /// chunk (on by default; some servers reject the option).
    pub include_usage: bool,
    /// Further fields of every body (`temperature`, `ignore_eos`), over the defaults.
    pub extra: Map<String, Value>,
}

impl RequestSpec {
    /// A spec for `api` and `model`, usage asked, no `max_tokens`.
    pub fn new(api: Api, model: impl Into<String>) -> Self {
        RequestSpec {
            api,
            model: model.into(),
            max_tokens: None,
            include_usage: true,
            extra: Map::new(),
        }
    }

    /// The JSON body of a streaming request for `prompt`: `model`, `messages` (a user message
    /// of the text, or the prompt's messages) or `prompt`, `max_tokens`, `stream: true` and,
    /// if asked, `stream_options: {include_usage: true}`.
    pub fn body(&self, prompt: &Prompt) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        match (&prompt.text, self.api) {
            (PromptText::Text(t), Api::Chat) => {
                body.insert("messages".into(), json!([{"role": "user", "content": t}]));
            }
            (PromptText::Messages(m), _) => {
                body.insert("messages".into(), m.clone());
            }
            (PromptText::Text(t), Api::Completions) => {
                body.insert("prompt".into(), Value::String(t.clone()));
            }
        }
        if let Some(n) = prompt.max_tokens.or(self.max_tokens) {
            body.insert("max_tokens".into(), n.into());
        }
        body.insert("stream".into(), Value::Bool(true));
        if self.include_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }

    /// Every prompt's body, encoded once before the load: a request takes the next one
    /// (`bodies[i % len]`) without encoding anything.
    pub fn bodies(&self, prompts: &[Prompt]) -> Vec<Bytes> {
        prompts
            .iter()
            .map(|p| Bytes::from(self.body(p).to_string()))
            .collect()
    }
}
