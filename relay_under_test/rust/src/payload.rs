//! The channel's request (contract section 3) and the relay's answers.

use serde_json::Value;

/// A well-formed transfer request. `amount` is kept as the JSON number it was.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub guid: String,
    pub from: String,
    pub to: String,
    pub amount: Value,
}

fn valid_guid(g: &str) -> bool {
    (1..=64).contains(&g.len()) && g.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Parses and validates a request body; `Err` means malformed (E400).
pub fn parse_transfer(body: &[u8]) -> Result<Transfer, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    let string = |k: &str| -> Result<String, String> {
        match obj.get(k) {
            None => Err(format!("missing field {k}")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("field {k} must be a string")),
        }
    };
    let guid = string("guid")?;
    if !valid_guid(&guid) {
        return Err("guid must be 1 to 64 characters of A-Z a-z 0-9 - _".into());
    }
    let from = string("from")?;
    let to = string("to")?;
    let amount = match obj.get("amount") {
        None => return Err("missing field amount".into()),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {
            if n.as_u64().map_or(true, |a| a == 0) {
                return Err("amount must be an integer > 0".into());
            }
            Value::Number(n.clone())
        }
        Some(_) => return Err("amount must be an integer".into()),
    };
    Ok(Transfer { guid, from, to, amount })
}

impl Transfer {
    /// The body sent to the account system: the four fields of the contract.
    pub fn account_body(&self) -> String {
        serde_json::json!({"guid": self.guid, "from": self.from, "to": self.to, "amount": self.amount}).to_string()
    }

    /// Whether `other` is the same request (same from, to and amount).
    pub fn same_request(&self, other: &Transfer) -> bool {
        self.from == other.from && self.to == other.to && self.amount == other.amount
    }
}

/// `{"guid":...,"code":...,"message":...}` with the fields in that order.
pub fn answer(guid: Option<&str>, code: &str, message: &str) -> String {
    let s = |x: &str| Value::String(x.to_string()).to_string();
    match guid {
        Some(g) => format!("{{\"guid\":{},\"code\":{},\"message\":{}}}", s(g), s(code), s(message)),
        None => format!("{{\"code\":{},\"message\":{}}}", s(code), s(message)),
    }
}

pub const MSG_E901: &str = "sent, but no answer came: outcome unknown";
pub const MSG_E902: &str = "not sent: the account system could not be reached";
pub const MSG_E903: &str = "this GUID is being sent right now";
pub const MSG_E904: &str = "this GUID was already used for a different request";
