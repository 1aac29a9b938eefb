//! What one pass over a surface event's `data` reads of it, borrowed from the line: exactly the
//! facts the projection rules of `project.rs` look at to pair, repair and count messages, with
//! everything else (the texts themselves) validated and skipped.
//!
//! Each type follows `serde_json::Value`'s reading of the same JSON: a repeated key keeps its
//! last value, `get` on something that is not an object finds nothing, and `as_str` on a value
//! that is not a string gives nothing.
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Accepts any value, keeps nothing (used for the scalar cases of the visitors below).
macro_rules! scalars {
    ($value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut s: A) -> Result<(), A::Error> {
    while s.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut m: A) -> Result<(), A::Error> {
    while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A string borrowed from the input when it has no escapes (serde's own `Cow<str>` always
/// copies): object keys, event types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A value read as `Value::as_str` reads it: the string, or `Other` for any other JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrOr<'a> {
    Str(Cow<'a, str>),
    Null,
    Other,
}

impl<'a> StrOr<'a> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            StrOr::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = StrOr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Owned(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrOr::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrOr::Null)
            }
            scalars!(StrOr::Other);
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s).map(|()| StrOr::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m).map(|()| StrOr::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// `function` of a tool call, when it is an object (`None` otherwise, as `as_object` reads it).
#[derive(Debug, Default, Clone)]
pub struct FuncSeen<'a> {
    /// `Some` when the key is there (its value then names the call, string or not).
    pub name: Option<StrOr<'a>>,
    pub arguments: Option<StrOr<'a>>,
}

/// A tool call (a `tool_calls` entry) or a content block: the fields of both.
#[derive(Debug, Default, Clone)]
pub struct ObjSeen<'a> {
    /// False for an entry that is not an object (every `get` on it finds nothing).
    pub object: bool,
    pub kind: Option<StrOr<'a>>,
    pub text: Option<StrOr<'a>>,
    pub id: Option<StrOr<'a>>,
    pub name: Option<StrOr<'a>>,
    pub function: Option<FuncSeen<'a>>,
    pub arguments: Option<StrOr<'a>>,
    pub input: Option<StrOr<'a>>,
}

/// Reads an object's keys one by one into `T` (the last of a repeated key wins); any other
/// value gives `T::default()` through `other`.
trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error>;
    fn other(self) -> Self {
        self
    }
    fn object(self) -> Self {
        self
    }
}

struct FieldsVisitor<T>(PhantomData<T>);

impl<'de, T: Fields<'de>> Visitor<'de> for FieldsVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<T, A::Error> {
        let mut out = T::default();
        while let Some(Text(key)) = m.next_key::<Text<'de>>()? {
            out.field(&key, &mut m)?;
        }
        Ok(out.object())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<T, A::Error> {
        drain_seq(s).map(|()| T::default().other())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<T, E> {
        Ok(T::default().other())
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default().other())
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default().other())
    }
    scalars!(T::default().other());
}

fn fields<'de, D: Deserializer<'de>, T: Fields<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(FieldsVisitor(PhantomData))
}

impl<'de: 'a, 'a> Fields<'de> for FuncSeen<'a> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error> {
        match key {
            "name" => self.name = Some(m.next_value()?),
            "arguments" => self.arguments = Some(m.next_value()?),
            _ => {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `Some(func)` for an object, `None` for anything else.
struct MaybeFunc<'a>(Option<FuncSeen<'a>>);

impl Default for MaybeFunc<'_> {
    fn default() -> Self {
        MaybeFunc(Some(FuncSeen::default()))
    }
}

impl<'de: 'a, 'a> Fields<'de> for MaybeFunc<'a> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error> {
        self.0.get_or_insert_with(FuncSeen::default).field(key, m)
    }
    fn other(self) -> Self {
        MaybeFunc(None)
    }
}

impl<'de: 'a, 'a> Fields<'de> for ObjSeen<'a> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = Some(m.next_value()?),
            "text" => self.text = Some(m.next_value()?),
            "id" => self.id = Some(m.next_value()?),
            "name" => self.name = Some(m.next_value()?),
            "function" => {
                let f: MaybeFunc<'a> = m.next_value_seed(Seed(PhantomData))?;
                self.function = f.0;
            }
            "arguments" => self.arguments = Some(m.next_value()?),
            "input" => self.input = Some(m.next_value()?),
            _ => {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn object(mut self) -> Self {
        self.object = true;
        self
    }
}

/// Deserializes any `Fields` type.
struct Seed<T>(PhantomData<T>);

impl<'de, T: Fields<'de>> de::DeserializeSeed<'de> for Seed<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        fields(d)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjSeen<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fields(d)
    }
}

/// A `content` value as `project::text_of` reads it.
#[derive(Debug, Default, Clone)]
pub enum ContentSeen<'a> {
    /// `null` (or no content at all): the empty text.
    #[default]
    Null,
    Str {
        empty: bool,
    },
    /// A list of blocks: how many text parts it joins, whether the first is empty, whether it
    /// holds a block that is not text (then it stays a list), and its `tool_use` blocks.
    List {
        parts: usize,
        first_empty: bool,
        non_text: bool,
        tool_uses: Vec<ObjSeen<'a>>,
    },
    /// A number, a boolean or an object: its JSON text (never empty).
    Other,
}

impl ContentSeen<'_> {
    /// The derived content is the empty text.
    pub fn is_empty_text(&self) -> bool {
        match self {
            ContentSeen::Null => true,
            ContentSeen::Str { empty } => *empty,
            ContentSeen::List {
                parts,
                first_empty,
                non_text,
                ..
            } => !non_text && (*parts == 0 || (*parts == 1 && *first_empty)),
            ContentSeen::Other => false,
        }
    }

    /// The derived content stays a list of blocks.
    pub fn is_blocks(&self) -> bool {
        matches!(self, ContentSeen::List { non_text: true, .. })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentSeen<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ContentSeen<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(ContentSeen::Str {
                    empty: s.is_empty(),
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentSeen::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentSeen::Null)
            }
            scalars!(ContentSeen::Other);
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m).map(|()| ContentSeen::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let (mut parts, mut first_empty, mut non_text) = (0usize, false, false);
                let mut tool_uses = Vec::new();
                while let Some(block) = s.next_element::<BlockSeen<'a>>()? {
                    let text_part = match block {
                        BlockSeen::Str(empty) => Some(empty),
                        BlockSeen::NotObject => {
                            non_text = true;
                            None
                        }
                        BlockSeen::Object(o) => match o.kind.as_ref().and_then(StrOr::as_str) {
                            Some("text") | None => {
                                let text = o.text.as_ref().and_then(StrOr::as_str).unwrap_or("");
                                Some(text.is_empty())
                            }
                            Some("tool_use") => {
                                tool_uses.push(o);
                                None
                            }
                            Some("thinking") | Some("redacted_thinking") => None,
                            Some(_) => {
                                non_text = true;
                                None
                            }
                        },
                    };
                    if let Some(empty) = text_part {
                        if parts == 0 {
                            first_empty = empty;
                        }
                        parts += 1;
                    }
                }
                Ok(ContentSeen::List {
                    parts,
                    first_empty,
                    non_text,
                    tool_uses,
                })
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// One element of a content list.
enum BlockSeen<'a> {
    /// A string block (whether it is empty).
    Str(bool),
    Object(ObjSeen<'a>),
    /// A number, boolean, null or list: not a text block.
    NotObject,
}

impl<'de: 'a, 'a> Deserialize<'de> for BlockSeen<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = BlockSeen<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(BlockSeen::Str(s.is_empty()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BlockSeen::NotObject)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BlockSeen::NotObject)
            }
            scalars!(BlockSeen::NotObject);
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s).map(|()| BlockSeen::NotObject)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                FieldsVisitor::<ObjSeen<'a>>(PhantomData)
                    .visit_map(m)
                    .map(BlockSeen::Object)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// `message` of an assistant message or a tool result (`Default` when it is not an object).
#[derive(Debug, Default, Clone)]
pub struct MsgSeen<'a> {
    pub content: ContentSeen<'a>,
    /// The entries of `tool_calls` when it is a list.
    pub tool_calls: Option<Vec<ObjSeen<'a>>>,
    pub tool_call_id: Option<StrOr<'a>>,
    pub tool_call_id_snake: Option<StrOr<'a>>,
    pub tool_name: Option<StrOr<'a>>,
    pub name: Option<StrOr<'a>>,
}

/// `tool_calls` when it is a list, `None` for anything else.
struct CallList<'a>(Option<Vec<ObjSeen<'a>>>);

impl<'de: 'a, 'a> Deserialize<'de> for CallList<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = CallList<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(c) = s.next_element::<ObjSeen<'a>>()? {
                    out.push(c);
                }
                Ok(CallList(Some(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m).map(|()| CallList(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(CallList(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(CallList(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(CallList(None))
            }
            scalars!(CallList(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de: 'a, 'a> Fields<'de> for MsgSeen<'a> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = m.next_value()?,
            "tool_calls" => self.tool_calls = m.next_value::<CallList<'a>>()?.0,
            "toolCallId" => self.tool_call_id = Some(m.next_value()?),
            "tool_call_id" => self.tool_call_id_snake = Some(m.next_value()?),
            "toolName" => self.tool_name = Some(m.next_value()?),
            "name" => self.name = Some(m.next_value()?),
            _ => {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MsgSeen<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fields(d)
    }
}

/// `data` of a surface event (an object: the log's rules refuse anything else there).
#[derive(Debug, Default, Clone)]
pub struct DataSeen<'a> {
    pub content: ContentSeen<'a>,
    pub name: Option<StrOr<'a>>,
    pub message: MsgSeen<'a>,
}

impl<'de: 'a, 'a> Fields<'de> for DataSeen<'a> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, m: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = m.next_value()?,
            "name" => self.name = Some(m.next_value()?),
            "message" => self.message = m.next_value()?,
            _ => {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for DataSeen<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fields(d)
    }
}
