//! Trimgate's wire layer: what reads and writes the dialects' bytes. It knows no config, no
//! HTTP rendering and nothing above it; gateway-core re-exports its modules at their old paths.
//!
//! - [`dialect`]   — the closed set of wire dialects (OpenAI Chat, OpenAI Responses, Anthropic Messages).
//! - [`provider`]  — the closed set of provider kinds, and what each is known to be and do.
//! - [`bedrock`]   — Amazon Bedrock's wire (event-stream frames, InvokeModel, Converse, its errors) to and from Anthropic Messages.
//! - [`sniff`]     — reads `model` and `stream` from the inbound bytes and splices the few edits passthrough needs.
//! - [`usage`]     — provider-reported token usage, per dialect, and where a stream's answer ends.
//! - [`answer_text`] — the text a streamed answer has said so far, for counting when the provider does not.
//! - [`sse`]       — server-sent events: where a frame ends, and the data it carries.
//! - [`translate`] — the canonical IR and a codec per dialect, for requests across dialects.
//! - [`tokenizer`] — the o200k_base tokenizer, built on first use from a deflated table.
//! - [`error`]     — what the wire refuses ([`WireError`]), worded for the client.
//!
//! Underneath, `scan` answers the few questions sniff and usage ask of a body without
//! parsing all of it.

pub mod answer_text;
pub mod bedrock;
pub mod dialect;
pub mod error;
pub mod provider;
mod scan;
pub mod sniff;
pub mod sse;
pub mod tokenizer;
pub mod translate;
pub mod usage;

pub use error::WireError;
