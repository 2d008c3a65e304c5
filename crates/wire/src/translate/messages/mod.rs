//! The Anthropic Messages codec: requests and responses to and from the IR.

mod request;
mod response;
pub(crate) mod stream;

pub use request::*;
pub use response::*;
