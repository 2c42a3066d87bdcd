//! The JSON inside stream frames (chunks, events, NDJSON lines).
//!
//! Frames are parsed into [`Value`] by one small, non-generic parser: miniserde 0.1's,
//! ported (the same texts accepted, the same numbers, escapes and error cases; tests
//! compare the two), building the tree directly instead of through miniserde's visitor
//! traits, and keeping an object's members in a list instead of a `BTreeMap`. That cut
//! 3.8 KB gzip of the browser analysis's wasm. serde_json's tree deserializer was the
//! largest single item in the browser probe's wasm, and the frames only need a handful
//! of lookups. Reports, whose types derive serde, keep serde_json.

use std::borrow::Cow;
use std::fmt;

/// A JSON value, borrowing from the text it was parsed from: a string or key without
/// escapes is a slice of the frame, not a copy. A chat chunk has a dozen keys and
/// strings; allocating each was most of the analysis's decode time (#35's profile).
/// [`parse`] hands it out inside a [`Document`], whose drop is safe at any depth.
pub enum Value<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Object<'a>),
}

/// A JSON number as it was written: a non-negative integer, a negative integer, or a
/// number with a fraction or an exponent (or an integer too large for 64 bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    U64(u64),
    I64(i64),
    F64(f64),
}

/// A JSON object: its members in the text's order. A key written twice counts with its
/// last value, as in a map.
#[derive(Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Value<'a>)>,
}

impl<'a> Object<'a> {
    /// The member's value (the last one, for a repeated key).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.members
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The members a map would hold, in key order: for a repeated key, its last value.
    fn sorted(&self) -> Vec<&(Cow<'a, str>, Value<'a>)> {
        let m = &self.members;
        let order = crate::order::stable_order(m.len(), &|a, b| m[a].0 <= m[b].0);
        let mut out: Vec<&(Cow<'a, str>, Value<'a>)> = Vec::with_capacity(m.len());
        for i in order {
            match out.last_mut() {
                // Equal keys are adjacent and in text order: the later one replaces.
                Some(last) if last.0 == m[i].0 => *last = &m[i],
                _ => out.push(&m[i]),
            }
        }
        out
    }
}

/// A parsed frame: its [`Value`] (through `Deref`), and how deep it nests.
///
/// Dropping a value recurses once per level of nesting, so a hostile frame nested
/// 100,000 deep would overflow the stack. A document that deep is torn down level by
/// level instead; a frame as providers send it (a few levels) drops as usual. Doing the
/// level-by-level teardown for every value (as `Value`'s own `Drop` did) moved every
/// child once more and was a fifth of the decode time.
pub struct Document<'a> {
    root: Value<'a>,
    depth: usize,
}

/// Nesting a recursive drop handles without concern: a few KB of stack.
const RECURSIVE_DROP_DEPTH: usize = 64;

impl<'a> std::ops::Deref for Document<'a> {
    type Target = Value<'a>;

    fn deref(&self) -> &Value<'a> {
        &self.root
    }
}

impl Drop for Document<'_> {
    fn drop(&mut self) {
        if self.depth <= RECURSIVE_DROP_DEPTH {
            return;
        }
        // Children move to a list and are dropped from there, emptied first: no recursion.
        let mut stack = Vec::new();
        take_children(&mut self.root, &mut stack);
        while let Some(mut child) = stack.pop() {
            take_children(&mut child, &mut stack);
        }
    }
}

fn take_children<'a>(value: &mut Value<'a>, stack: &mut Vec<Value<'a>>) {
    match value {
        Value::Array(items) => stack.append(items),
        Value::Object(object) => stack.extend(object.members.drain(..).map(|(_, v)| v)),
        _ => {}
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::U64(n) => write!(f, "{n}"),
            Number::I64(n) => write!(f, "{n}"),
            Number::F64(n) => f.write_str(zmij::Buffer::new().format(*n)),
        }
    }
}

/// `null`, to stand in for a missing member.
pub static NULL: Value<'static> = Value::Null;

/// Parses one frame; `None` when it is not JSON. The parser keeps no error position, so
/// callers report the frame's text instead.
pub fn parse(text: &str) -> Option<Document<'_>> {
    let mut p = Parser {
        text,
        input: text.as_bytes(),
        pos: 0,
        buffer: Vec::new(),
    };
    // The containers still open, innermost last. No recursion: any depth parses.
    let mut building = Building {
        open: Vec::new(),
        depth: 0,
    };
    let Building { open, depth } = &mut building;
    let value = 'outer: loop {
        let mut accept_comma = match p.event()? {
            Event::ArrayStart => {
                open.push(Open::Array(Vec::new()));
                *depth = (*depth).max(open.len());
                false
            }
            Event::ObjectStart => {
                // Room for a chat chunk's members without growing (6 to 8 of them).
                open.push(Open::Object(Vec::with_capacity(8), Cow::Borrowed("")));
                *depth = (*depth).max(open.len());
                false
            }
            Event::Scalar(value) => match open.last_mut() {
                None => break 'outer value,
                Some(container) => {
                    container.add(value);
                    true
                }
            },
        };
        // Commas and closing brackets up to the next member.
        loop {
            match p.parse_whitespace().unwrap_or(b'\0') {
                b',' if accept_comma => {
                    p.bump();
                    break;
                }
                close @ (b']' | b'}') => {
                    p.bump();
                    let value = match (open.pop()?, close) {
                        (Open::Array(items), b']') => Value::Array(items),
                        (Open::Object(members, _), b'}') => Value::Object(Object { members }),
                        _ => return None,
                    };
                    match open.last_mut() {
                        None => break 'outer value,
                        Some(container) => container.add(value),
                    }
                    accept_comma = true;
                }
                _ if accept_comma => return None,
                _ => break,
            }
        }
        // An object's next member starts with its key.
        if let Some(Open::Object(_, key)) = open.last_mut() {
            if p.parse_whitespace() != Some(b'"') {
                return None;
            }
            p.bump();
            *key = p.parse_str()?;
            if p.parse_whitespace() != Some(b':') {
                return None;
            }
            p.bump();
        }
    };
    // A document, also for text that is no JSON after all, so a deep prefix drops safely.
    let document = Document {
        root: value,
        depth: building.depth,
    };
    match p.parse_whitespace() {
        Some(_) => None,
        None => Some(document),
    }
}

/// Compact JSON text of a value, object keys sorted (a repeated key once, with its last
/// value), numbers as they were read.
pub fn to_string(value: &Value<'_>) -> String {
    enum Frame<'v, 'a> {
        Array(std::slice::Iter<'v, Value<'a>>),
        Object(std::vec::IntoIter<&'v (Cow<'a, str>, Value<'a>)>),
    }
    let mut out = String::new();
    let mut stack: Vec<(Frame<'_, '_>, bool)> = Vec::new();
    let mut next = Some(value);
    loop {
        match next.take() {
            None => {}
            Some(Value::Null) => out.push_str("null"),
            Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Some(Value::Number(Number::F64(n))) if !n.is_finite() => out.push_str("null"),
            Some(Value::Number(n)) => {
                use fmt::Write as _;
                let _ = write!(out, "{n}");
            }
            Some(Value::String(s)) => write_string(s, &mut out),
            Some(Value::Array(items)) => {
                out.push('[');
                stack.push((Frame::Array(items.iter()), true));
            }
            Some(Value::Object(object)) => {
                out.push('{');
                stack.push((Frame::Object(object.sorted().into_iter()), true));
            }
        }
        let Some((frame, first)) = stack.last_mut() else {
            return out;
        };
        let comma = if *first { "" } else { "," };
        *first = false;
        match frame {
            Frame::Array(items) => match items.next() {
                Some(item) => {
                    out.push_str(comma);
                    next = Some(item);
                }
                None => {
                    out.push(']');
                    stack.pop();
                }
            },
            Frame::Object(members) => match members.next() {
                Some((key, member)) => {
                    out.push_str(comma);
                    write_string(key, &mut out);
                    out.push(':');
                    next = Some(member);
                }
                None => {
                    out.push('}');
                    stack.pop();
                }
            },
        }
    }
}

/// `value` as a JSON string, quoted and escaped as miniserde and serde_json write it
/// (short escapes where JSON has them, `\u00xx` for other control characters).
pub fn write_string(value: &str, out: &mut String) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c < ' ' => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(c as u8 >> 4)]));
                out.push(char::from(HEX[usize::from(c as u8 & 0xF)]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The containers still open while a frame is read, and the deepest nesting so far. A
/// frame that turns out not to be JSON drops what was read of it here, level by level
/// when it nests deep (see [`Document`]).
struct Building<'a> {
    open: Vec<Open<'a>>,
    depth: usize,
}

impl Drop for Building<'_> {
    fn drop(&mut self) {
        if self.depth <= RECURSIVE_DROP_DEPTH {
            return;
        }
        let mut stack = Vec::new();
        for container in self.open.drain(..) {
            match container {
                Open::Array(items) => stack.extend(items),
                Open::Object(members, _) => stack.extend(members.into_iter().map(|(_, v)| v)),
            }
            while let Some(mut child) = stack.pop() {
                take_children(&mut child, &mut stack);
            }
        }
    }
}

enum Open<'a> {
    Array(Vec<Value<'a>>),
    /// The members so far and the key of the one being read.
    Object(Vec<(Cow<'a, str>, Value<'a>)>, Cow<'a, str>),
}

impl<'a> Open<'a> {
    fn add(&mut self, value: Value<'a>) {
        match self {
            Open::Array(items) => items.push(value),
            Open::Object(members, key) => members.push((std::mem::take(key), value)),
        }
    }
}

enum Event<'a> {
    Scalar(Value<'a>),
    ArrayStart,
    ObjectStart,
}

struct Parser<'a> {
    /// The frame, for slices of it (`input` is its bytes).
    text: &'a str,
    input: &'a [u8],
    pos: usize,
    /// A string with escapes, unescaped.
    buffer: Vec<u8>,
}

/// `a * 10 + b` would exceed `max`.
fn overflows(a: u64, b: u64, max: u64) -> bool {
    a >= max / 10 && (a > max / 10 || b > max % 10)
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Option<u8> {
        let ch = self.peek()?;
        self.pos += 1;
        Some(ch)
    }

    fn next_or_nul(&mut self) -> u8 {
        self.next().unwrap_or(b'\0')
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn peek_or_nul(&self) -> u8 {
        self.peek().unwrap_or(b'\0')
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn parse_whitespace(&mut self) -> Option<u8> {
        loop {
            match self.peek() {
                Some(b' ' | b'\n' | b'\t' | b'\r') => self.bump(),
                other => return other,
            }
        }
    }

    fn event(&mut self) -> Option<Event<'a>> {
        let peek = self.parse_whitespace()?;
        self.bump();
        let value = match peek {
            b'"' => Value::String(self.parse_str()?),
            digit @ b'0'..=b'9' => Value::Number(self.parse_integer(true, digit)?),
            b'-' => {
                let first_digit = self.next_or_nul();
                Value::Number(self.parse_integer(false, first_digit)?)
            }
            b'{' => return Some(Event::ObjectStart),
            b'[' => return Some(Event::ArrayStart),
            b'n' => {
                self.parse_ident(b"ull")?;
                Value::Null
            }
            b't' => {
                self.parse_ident(b"rue")?;
                Value::Bool(true)
            }
            b'f' => {
                self.parse_ident(b"alse")?;
                Value::Bool(false)
            }
            _ => return None,
        };
        Some(Event::Scalar(value))
    }

    fn parse_ident(&mut self, ident: &[u8]) -> Option<()> {
        for expected in ident {
            if self.next()? != *expected {
                return None;
            }
        }
        Some(())
    }

    /// The string after an opening quote, up to and without its closing quote: a slice
    /// of the frame when it has no escapes.
    fn parse_str(&mut self) -> Option<Cow<'a, str>> {
        // Index of the first byte not yet copied into the buffer.
        let mut start = self.pos;
        self.buffer.clear();
        loop {
            // One pass over the slice (no bounds check per byte): the plain run of the
            // string up to its quote, escape or control character.
            let rest = self.input.get(self.pos..).unwrap_or_default();
            self.pos += rest
                .iter()
                .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
                .unwrap_or(rest.len());
            match self.next()? {
                b'"' => {
                    let end = self.pos - 1;
                    if self.buffer.is_empty() {
                        // Quotes are ASCII, so both ends are char boundaries of the frame:
                        // no UTF-8 check (it was a tenth of the decode time).
                        return self.text.get(start..end).map(Cow::Borrowed);
                    }
                    self.buffer.extend_from_slice(&self.input[start..end]);
                    // The input is a str and escapes decode to whole chars.
                    return std::str::from_utf8(&self.buffer)
                        .ok()
                        .map(|s| Cow::Owned(s.to_owned()));
                }
                b'\\' => {
                    self.buffer
                        .extend_from_slice(&self.input[start..self.pos - 1]);
                    self.parse_escape()?;
                    start = self.pos;
                }
                // A control character.
                _ => return None,
            }
        }
    }

    /// One escape after its backslash, appended to the buffer.
    fn parse_escape(&mut self) -> Option<()> {
        let byte = match self.next()? {
            b @ (b'"' | b'\\' | b'/') => b,
            b'b' => b'\x08',
            b'f' => b'\x0c',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let c = match self.decode_hex_escape()? {
                    0xDC00..=0xDFFF => return None,
                    // Outside the BMP: a UTF-16 surrogate pair, two escapes.
                    n1 @ 0xD800..=0xDBFF => {
                        if self.next()? != b'\\' || self.next()? != b'u' {
                            return None;
                        }
                        let n2 = self.decode_hex_escape()?;
                        if !(0xDC00..=0xDFFF).contains(&n2) {
                            return None;
                        }
                        let n =
                            ((u32::from(n1 - 0xD800) << 10) | u32::from(n2 - 0xDC00)) + 0x1_0000;
                        char::from_u32(n)?
                    }
                    n => char::from_u32(u32::from(n))?,
                };
                self.buffer
                    .extend_from_slice(c.encode_utf8(&mut [0_u8; 4]).as_bytes());
                return Some(());
            }
            _ => return None,
        };
        self.buffer.push(byte);
        Some(())
    }

    fn decode_hex_escape(&mut self) -> Option<u16> {
        let mut n = 0;
        for _ in 0..4 {
            let digit = char::from(self.next()?).to_digit(16)?;
            n = n * 16 + digit as u16;
        }
        Some(n)
    }

    fn parse_integer(&mut self, nonnegative: bool, first_digit: u8) -> Option<Number> {
        match first_digit {
            // There can be only one leading '0'.
            b'0' if self.peek_or_nul().is_ascii_digit() => None,
            b'0' => self.parse_number(nonnegative, 0),
            c @ b'1'..=b'9' => {
                let mut res = u64::from(c - b'0');
                loop {
                    match self.peek_or_nul() {
                        c @ b'0'..=b'9' => {
                            self.bump();
                            let digit = u64::from(c - b'0');
                            // Past u64, the number is read as a float.
                            if overflows(res, digit, u64::MAX) {
                                return self
                                    .parse_long_integer(nonnegative, res, 1)
                                    .map(Number::F64);
                            }
                            res = res * 10 + digit;
                        }
                        _ => return self.parse_number(nonnegative, res),
                    }
                }
            }
            _ => None,
        }
    }

    fn parse_long_integer(
        &mut self,
        nonnegative: bool,
        significand: u64,
        mut exponent: i32,
    ) -> Option<f64> {
        loop {
            match self.peek_or_nul() {
                b'0'..=b'9' => {
                    self.bump();
                    exponent += 1;
                }
                b'.' => return self.parse_decimal(nonnegative, significand, exponent),
                b'e' | b'E' => return self.parse_exponent(nonnegative, significand, exponent),
                _ => return f64_from_parts(nonnegative, significand, exponent),
            }
        }
    }

    fn parse_number(&mut self, nonnegative: bool, significand: u64) -> Option<Number> {
        match self.peek_or_nul() {
            b'.' => self
                .parse_decimal(nonnegative, significand, 0)
                .map(Number::F64),
            b'e' | b'E' => self
                .parse_exponent(nonnegative, significand, 0)
                .map(Number::F64),
            _ if nonnegative => Some(Number::U64(significand)),
            _ => {
                let neg = (significand as i64).wrapping_neg();
                // Below i64::MIN, a float.
                Some(if neg > 0 {
                    Number::F64(-(significand as f64))
                } else {
                    Number::I64(neg)
                })
            }
        }
    }

    fn parse_decimal(
        &mut self,
        nonnegative: bool,
        mut significand: u64,
        mut exponent: i32,
    ) -> Option<f64> {
        self.bump();
        let mut at_least_one_digit = false;
        while let c @ b'0'..=b'9' = self.peek_or_nul() {
            self.bump();
            let digit = u64::from(c - b'0');
            at_least_one_digit = true;
            if overflows(significand, digit, u64::MAX) {
                // Digits past u64's precision are ignored.
                while self.peek_or_nul().is_ascii_digit() {
                    self.bump();
                }
                break;
            }
            significand = significand * 10 + digit;
            exponent -= 1;
        }
        if !at_least_one_digit {
            return None;
        }
        match self.peek_or_nul() {
            b'e' | b'E' => self.parse_exponent(nonnegative, significand, exponent),
            _ => f64_from_parts(nonnegative, significand, exponent),
        }
    }

    fn parse_exponent(
        &mut self,
        nonnegative: bool,
        significand: u64,
        starting_exp: i32,
    ) -> Option<f64> {
        self.bump();
        let positive_exp = match self.peek_or_nul() {
            b'+' => {
                self.bump();
                true
            }
            b'-' => {
                self.bump();
                false
            }
            _ => true,
        };
        // A digit must follow.
        let mut exp = match self.next_or_nul() {
            c @ b'0'..=b'9' => i32::from(c - b'0'),
            _ => return None,
        };
        while let c @ b'0'..=b'9' = self.peek_or_nul() {
            self.bump();
            let digit = i32::from(c - b'0');
            if overflows(exp as u64, digit as u64, i32::MAX as u64) {
                // Too large an exponent: an error, or zero for a negative one (or 0e…).
                if significand != 0 && positive_exp {
                    return None;
                }
                while self.peek_or_nul().is_ascii_digit() {
                    self.bump();
                }
                return Some(if nonnegative { 0.0 } else { -0.0 });
            }
            exp = exp * 10 + digit;
        }
        let final_exp = if positive_exp {
            starting_exp.saturating_add(exp)
        } else {
            starting_exp.saturating_sub(exp)
        };
        f64_from_parts(nonnegative, significand, final_exp)
    }
}

fn f64_from_parts(nonnegative: bool, significand: u64, mut exponent: i32) -> Option<f64> {
    let mut f = significand as f64;
    loop {
        match POW10.get(exponent.unsigned_abs() as usize) {
            Some(&pow) => {
                if exponent >= 0 {
                    f *= pow;
                    if f.is_infinite() {
                        return None;
                    }
                } else {
                    f /= pow;
                }
                break;
            }
            None => {
                if f == 0.0 {
                    break;
                }
                if exponent >= 0 {
                    return None;
                }
                f /= 1e308;
                exponent += 308;
            }
        }
    }
    Some(if nonnegative { f } else { -f })
}

#[allow(clippy::excessive_precision)]
#[rustfmt::skip]
static POW10: [f64; 309] = [
    1e000, 1e001, 1e002, 1e003, 1e004, 1e005, 1e006, 1e007, 1e008, 1e009,
    1e010, 1e011, 1e012, 1e013, 1e014, 1e015, 1e016, 1e017, 1e018, 1e019,
    1e020, 1e021, 1e022, 1e023, 1e024, 1e025, 1e026, 1e027, 1e028, 1e029,
    1e030, 1e031, 1e032, 1e033, 1e034, 1e035, 1e036, 1e037, 1e038, 1e039,
    1e040, 1e041, 1e042, 1e043, 1e044, 1e045, 1e046, 1e047, 1e048, 1e049,
    1e050, 1e051, 1e052, 1e053, 1e054, 1e055, 1e056, 1e057, 1e058, 1e059,
    1e060, 1e061, 1e062, 1e063, 1e064, 1e065, 1e066, 1e067, 1e068, 1e069,
    1e070, 1e071, 1e072, 1e073, 1e074, 1e075, 1e076, 1e077, 1e078, 1e079,
    1e080, 1e081, 1e082, 1e083, 1e084, 1e085, 1e086, 1e087, 1e088, 1e089,
    1e090, 1e091, 1e092, 1e093, 1e094, 1e095, 1e096, 1e097, 1e098, 1e099,
    1e100, 1e101, 1e102, 1e103, 1e104, 1e105, 1e106, 1e107, 1e108, 1e109,
    1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116, 1e117, 1e118, 1e119,
    1e120, 1e121, 1e122, 1e123, 1e124, 1e125, 1e126, 1e127, 1e128, 1e129,
    1e130, 1e131, 1e132, 1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139,
    1e140, 1e141, 1e142, 1e143, 1e144, 1e145, 1e146, 1e147, 1e148, 1e149,
    1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156, 1e157, 1e158, 1e159,
    1e160, 1e161, 1e162, 1e163, 1e164, 1e165, 1e166, 1e167, 1e168, 1e169,
    1e170, 1e171, 1e172, 1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179,
    1e180, 1e181, 1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188, 1e189,
    1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196, 1e197, 1e198, 1e199,
    1e200, 1e201, 1e202, 1e203, 1e204, 1e205, 1e206, 1e207, 1e208, 1e209,
    1e210, 1e211, 1e212, 1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219,
    1e220, 1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227, 1e228, 1e229,
    1e230, 1e231, 1e232, 1e233, 1e234, 1e235, 1e236, 1e237, 1e238, 1e239,
    1e240, 1e241, 1e242, 1e243, 1e244, 1e245, 1e246, 1e247, 1e248, 1e249,
    1e250, 1e251, 1e252, 1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259,
    1e260, 1e261, 1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268, 1e269,
    1e270, 1e271, 1e272, 1e273, 1e274, 1e275, 1e276, 1e277, 1e278, 1e279,
    1e280, 1e281, 1e282, 1e283, 1e284, 1e285, 1e286, 1e287, 1e288, 1e289,
    1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299,
    1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308,
];

/// The lookups the dialects make, named as serde_json names them.
pub trait JsonExt<'a> {
    /// An object's member.
    fn get(&self, key: &str) -> Option<&Value<'a>>;
    fn as_str(&self) -> Option<&str>;
    /// A non-negative integer (a float is not one).
    fn as_u64(&self) -> Option<u64>;
    /// Any number.
    fn as_f64(&self) -> Option<f64>;
    fn as_bool(&self) -> Option<bool>;
    fn as_array(&self) -> Option<&[Value<'a>]>;
    fn is_null(&self) -> bool;
    fn is_object(&self) -> bool;
}

impl<'a> JsonExt<'a> for Value<'a> {
    fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(object) => object.get(key),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(Number::U64(n)) => Some(*n),
            Value::Number(Number::I64(n)) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::U64(n)) => Some(*n as f64),
            Value::Number(Number::I64(n)) => Some(*n as f64),
            Value::Number(Number::F64(n)) => Some(*n),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(array) => Some(array),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lookups_follow_json_types() {
        let v = parse(r#"{"a":{"b":[1,-2,2.5,"x",true,null]},"n":18446744073709551615}"#)
            .expect("valid JSON");
        let items = v
            .get("a")
            .and_then(|a| a.get("b"))
            .and_then(Value::as_array);
        let items = items.expect("array");
        assert_eq!(items[0].as_u64(), Some(1));
        assert_eq!(items[1].as_u64(), None, "negative is not u64");
        assert_eq!(items[1].as_f64(), Some(-2.0));
        assert_eq!(items[2].as_u64(), None, "a float is not an integer");
        assert_eq!(items[2].as_f64(), Some(2.5));
        assert_eq!(items[3].as_str(), Some("x"));
        assert_eq!(items[4].as_bool(), Some(true));
        assert!(items[5].is_null());
        assert_eq!(v.get("n").and_then(Value::as_u64), Some(u64::MAX));
        assert!(v.is_object() && v.get("missing").is_none() && items[3].get("a").is_none());
    }

    #[test]
    fn bad_json_is_none_and_text_is_compact_with_sorted_keys() {
        for bad in ["", "{", r#"{"a":}"#, "[1,]", "nul", r#""\ud800""#, "{} x"] {
            assert!(parse(bad).is_none(), "{bad:?} parsed");
        }
        let v = parse(r#"{ "b" : 1, "a" : [ "é\n" ] }"#).expect("valid JSON");
        assert_eq!(to_string(&v), r#"{"a":["é\n"],"b":1}"#);
    }

    #[test]
    fn deep_nesting_is_no_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let v = parse(&deep).expect("deep arrays");
        assert!(v.as_array().is_some());
        assert_eq!(to_string(&v), deep);
        let deep = format!("{}1{}", r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
        let v = parse(&deep).expect("deep objects");
        assert_eq!(to_string(&v), deep);
        // Deep values inside a frame that turns out not to be JSON drop safely too.
        let closed = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&format!("[{closed} x]")).is_none());
        assert!(parse(&format!(r#"{{"a":{closed},"b":"#)).is_none());
    }

    /// The port answers as miniserde does: the same texts accepted, the same value (its
    /// compact text shows number kinds, sorted keys and a repeated key's last value), the
    /// same member lookups, number text and f64 reading (`decimal::parse`).
    fn same_as_miniserde(text: &str) -> Result<(), TestCaseError> {
        use miniserde::json as mini;
        let ours = parse(text);
        let theirs = mini::from_str::<mini::Value>(text).ok();
        match (&ours, &theirs) {
            (None, None) => {}
            (Some(ours), Some(theirs)) => {
                prop_assert_eq!(to_string(ours), mini::to_string(theirs), "{:?}", text);
                match (&**ours, theirs) {
                    (Value::Object(o), mini::Value::Object(t)) => {
                        for (key, value) in t.iter() {
                            let found = o.get(key).map(to_string);
                            prop_assert_eq!(found, Some(mini::to_string(value)), "{:?}", text);
                        }
                    }
                    (Value::Number(o), mini::Value::Number(t)) => {
                        prop_assert_eq!(o.to_string(), t.to_string(), "{:?}", text);
                    }
                    _ => {}
                }
            }
            _ => prop_assert!(
                false,
                "{:?}: ours {}, miniserde's {}",
                text,
                ours.is_some(),
                theirs.is_some()
            ),
        }
        let ours = parse(text).and_then(|v| v.as_f64()).map(f64::to_bits);
        let theirs = mini::from_str::<f64>(text).ok().map(f64::to_bits);
        prop_assert_eq!(ours, theirs, "{:?}", text);
        Ok(())
    }

    #[test]
    fn edge_cases_match_miniserde() {
        let cases = [
            "0",
            "-0",
            "00",
            "-",
            "-a",
            "01",
            "1.",
            ".5",
            "1.5",
            "-1.5e3",
            "1e",
            "1e+",
            "1E-2",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890.5e-10",
            "1e308",
            "1e309",
            "-1e309",
            "1e-400",
            "2.2250738585072014e-308",
            "4.9e-324",
            "1.7976931348623157e308",
            "0e99999999999",
            "1e2147483647",
            "1e2147483648",
            "1e-2147483649",
            "0.000001e2147483648",
            "12345678901234567890123e-2147483650",
            "1.00000000000000000000000000000000000001",
            r#""\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\ud83d\udfff""#,
            "\"\u{1f}\"",
            "[1,\u{c}2]",
            r#""\u00e9\u00E9\/\b\f\n\r\t\"\\""#,
            r#""\x""#,
            r#""\u12""#,
            r#""\u12g4""#,
            "\"a\u{1}b\"",
            "\"tab\there\"",
            r#""é😀""#,
            r#"{"a":1,"a":2}"#,
            r#"{"b":{"x":1,"x":[2]},"a":0,"b":3}"#,
            r#"{"":1," ":2,"\u0000":3}"#,
            "[1,2,]",
            "[,1]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{,}",
            "[}",
            "{]",
            "[]]",
            " [ ] ",
            "\t{\n}\r",
            "{} ",
            "nul",
            "nulll",
            "true ",
            "tru",
            "falsey",
            "[null,true,false]",
            "\u{feff}1",
            "1 2",
            "\"\u{7f}\u{80}\"",
            r#"{"k":"\u001f\u0000\u007f"}"#,
        ];
        for text in cases {
            same_as_miniserde(text).unwrap();
        }
    }

    proptest! {
        /// Text made of JSON's pieces, mostly not JSON.
        #[test]
        fn jsonish_text_matches_miniserde(
            text in r#"[\[\]{}",:0-9eE.+\- \\ntrufalsbu/é😀\t\n\r\x00-\x1f]{0,40}"#,
        ) {
            same_as_miniserde(&text)?;
        }

        /// JSON texts (repeated keys, escapes, numbers of every kind), cut or spliced.
        #[test]
        fn json_texts_match_miniserde(
            text in json_text(),
            cut in any::<prop::sample::Index>(),
            insert in r#"[\[\]{}",:0-9eE.\- \\u]{0,2}"#,
        ) {
            same_as_miniserde(&text)?;
            let at = cut.index(text.len() + 1);
            if text.is_char_boundary(at) {
                same_as_miniserde(&text[..at])?;
                same_as_miniserde(&format!("{}{insert}{}", &text[..at], &text[at..]))?;
            }
        }

        /// Number texts, valid or nearly.
        #[test]
        fn number_texts_match_miniserde(
            text in r#"-?(0|[1-9][0-9]{0,30})?(\.[0-9]{0,30})?([eE][+-]?[0-9]{0,12})?"#,
        ) {
            same_as_miniserde(&text)?;
        }
    }

    /// JSON text: objects with repeated keys, strings with escapes and raw characters,
    /// numbers of every kind, spaced or compact.
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            r#"-?(0|[1-9][0-9]{0,22})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?"#,
            r#""([a-z é😀\x7f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}|\\ud83d\\ude00){0,5}""#,
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            let sep = prop_oneof![Just(""), Just(" "), Just("\n  ")];
            prop_oneof![
                (prop::collection::vec(inner.clone(), 0..4), sep.clone())
                    .prop_map(|(items, sep)| format!("[{}]", items.join(&format!(",{sep}")))),
                (prop::collection::vec(("[ab]{0,2}", inner), 0..5), sep).prop_map(
                    |(members, sep)| {
                        let members: Vec<String> = members
                            .iter()
                            .map(|(k, v)| format!("{sep}\"{k}\"{sep}:{sep}{v}"))
                            .collect();
                        format!("{{{}{sep}}}", members.join(","))
                    }
                ),
            ]
        })
    }
}
