//! The hook's stdin object, read defensively: a field of the wrong type counts as missing.

use serde_json::{Map, Value};

pub struct HookInput {
    root: Map<String, Value>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl HookInput {
    /// Parse one JSON object. Anything else (arrays, scalars, two objects, broken UTF-8) is an error.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("stdin is not one JSON object: {e}"))?;
        match value {
            Value::Object(root) => Ok(HookInput { root }),
            other => Err(format!("stdin is a JSON {}, not an object", kind(&other))),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.root.get(key)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.root.get(key).and_then(Value::as_str)
    }

    /// A string field that is present and not blank.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.str(key).filter(|s| !s.trim().is_empty())
    }

    /// True only for a JSON `true`: `"false"`, `"no"` and 1 are not booleans.
    pub fn is_true(&self, key: &str) -> bool {
        matches!(self.root.get(key), Some(Value::Bool(true)))
    }

    /// A string inside the `tool_input` object (a `tool_input` that is not an object has no fields).
    pub fn tool_input_str(&self, key: &str) -> Option<&str> {
        self.root
            .get("tool_input")
            .and_then(Value::as_object)
            .and_then(|o| o.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_objects_are_rejected() {
        for bad in ["[]", "\"x\"", "null", "", "{} {}", "\u{feff}{}"] {
            assert!(HookInput::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wrong_types_read_as_missing() {
        let i = HookInput::parse(
            br#"{"session_id":1,"stop_hook_active":"true","tool_input":"{\"command\":\"x\"}","prompt":["a"]}"#,
        )
        .unwrap();
        assert_eq!(i.str("session_id"), None);
        assert!(!i.is_true("stop_hook_active"));
        assert_eq!(i.tool_input_str("command"), None);
        assert_eq!(i.text("prompt"), None);
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let i = HookInput::parse(br#"{"hook_event_name":"Stop","hook_event_name":"PostToolUse"}"#)
            .unwrap();
        assert_eq!(i.str("hook_event_name"), Some("PostToolUse"));
    }
}
