//! The OpenAI Responses codec: requests and responses to and from the IR.
//!
//! Reasoning crosses as a `reasoning` item whose `encrypted_content` carries the other
//! provider's signature and whose summary carries the reasoning text, so a Responses
//! client that sends its items back returns Anthropic's signed thinking intact.

mod request;
mod response;
pub(crate) mod stream;

pub use request::*;
pub use response::*;
