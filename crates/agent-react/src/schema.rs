//! A small JSON-schema validator for the subset tool schemas use.
//!
//! We do not pull the `jsonschema` crate (its regex and format dependencies cost more compile
//! time than the whole agent crate). Checked keywords: `type` (a name or a list of names:
//! `object`, `array`, `string`, `number`, `integer`, `boolean`, `null`), `enum`, `const`,
//! `properties`, `required`, `additionalProperties` (bool or schema), `items` (schema),
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers), `minLength`,
//! `maxLength` (in Unicode scalar values), `minItems`, `maxItems`. Every other keyword
//! (`description`, `format`, `pattern`, `$ref`, …) is ignored, so a schema using them is checked
//! less strictly, never refused.

use serde_json::Value;

/// Checks `value` against `schema`.
///
/// # Errors
/// The first violation, as `<json pointer>: <what>`, e.g. `/amount: expected number, got string`
/// (the pointer is `/` for the root).
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, &mut String::new())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn matches_type(name: &str, value: &Value) -> bool {
    match name {
        "integer" => match value {
            Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        },
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn check(schema: &Value, value: &Value, path: &mut String) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        // `true` or a non-object schema accepts everything; `false` accepts nothing.
        return if schema == &Value::Bool(false) {
            Err(format!("{}: no value is allowed here", at(path)))
        } else {
            Ok(())
        };
    };
    if let Some(ty) = schema.get("type") {
        let names: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|n| matches_type(n, value)) {
            return Err(format!("{}: expected {}, got {}", at(path), names.join(" or "), type_name(value)));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!("{}: must be one of {}", at(path), list.join(", ")));
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        return Err(format!("{}: must be {expected}", at(path)));
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        return Err(format!("{}: missing required property '{key}'", at(path)));
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(key);
                let result = match properties.and_then(|p| p.get(key)) {
                    Some(sub) => check(sub, item, path),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            Err(format!("{}: property '{key}' is not allowed", at(&path[..len])))
                        }
                        Some(sub @ Value::Object(_)) => check(sub, item, path),
                        _ => Ok(()),
                    },
                };
                path.truncate(len);
                result?;
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                return Err(format!("{}: expected at least {min} items, got {}", at(path), items.len()));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (items.len() as u64) > max
            {
                return Err(format!("{}: expected at most {max} items, got {}", at(path), items.len()));
            }
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    let result = check(sub, item, path);
                    path.truncate(len);
                    result?;
                }
            }
        }
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                return Err(format!("{}: expected at least {min} characters, got {chars}", at(path)));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                return Err(format!("{}: expected at most {max} characters, got {chars}", at(path)));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
            if let Some(min) = bound("minimum")
                && x < min
            {
                return Err(format!("{}: must be >= {min}, got {n}", at(path)));
            }
            if let Some(max) = bound("maximum")
                && x > max
            {
                return Err(format!("{}: must be <= {max}, got {n}", at(path)));
            }
            if let Some(min) = bound("exclusiveMinimum")
                && x <= min
            {
                return Err(format!("{}: must be > {min}, got {n}", at(path)));
            }
            if let Some(max) = bound("exclusiveMaximum")
                && x >= max
            {
                return Err(format!("{}: must be < {max}, got {n}", at(path)));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::validate;

    #[test]
    fn checks_the_subset() {
        let schema = json!({
            "type": "object",
            "required": ["invoice_id", "amount"],
            "additionalProperties": false,
            "properties": {
                "invoice_id": {"type": "string", "minLength": 3},
                "amount": {"type": "number", "minimum": 0, "maximum": 1000000},
                "currency": {"enum": ["CNY", "USD"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            }
        });
        let ok = json!({"invoice_id": "INV-1", "amount": 5, "currency": "CNY", "tags": ["a"]});
        assert_eq!(validate(&schema, &ok), Ok(()));
        let cases = [
            (json!({"amount": 5}), "/: missing required property 'invoice_id'"),
            (json!({"invoice_id": "INV", "amount": "5"}), "/amount: expected number, got string"),
            (json!({"invoice_id": "INV", "amount": -1}), "/amount: must be >= 0, got -1"),
            (json!({"invoice_id": "IN", "amount": 1}), "/invoice_id: expected at least 3 characters, got 2"),
            (json!({"invoice_id": "INV", "amount": 1, "x": 1}), "/: property 'x' is not allowed"),
            (
                json!({"invoice_id": "INV", "amount": 1, "currency": "EUR"}),
                "/currency: must be one of \"CNY\", \"USD\"",
            ),
            (json!({"invoice_id": "INV", "amount": 1, "tags": ["a", 2]}), "/tags/1: expected string, got integer"),
            (json!([1]), "/: expected object, got array"),
        ];
        for (value, expected) in cases {
            assert_eq!(validate(&schema, &value), Err(expected.to_owned()), "{value}");
        }
        assert_eq!(validate(&json!({"type": "integer"}), &json!(3.0)), Ok(()));
        assert!(validate(&json!({"type": ["string", "null"]}), &json!(null)).is_ok());
    }
}
