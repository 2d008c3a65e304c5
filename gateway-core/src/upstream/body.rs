//! A provider's response body as the relay reads it: hyper's own, or one rewritten on the
//! way by a [`Convert`] (Bedrock's binary event stream into Anthropic SSE, a Converse
//! answer into a Messages one). The plain body costs nothing more than hyper's.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

/// Rewrites a body as its bytes arrive. `push` returns what can be sent so far (maybe
/// nothing); `finish` the rest once the provider's body has ended. An `Err` ends the body
/// with that reason: it is worded for a person and never holds a secret.
pub trait Convert: Send {
    fn push(&mut self, chunk: &[u8]) -> Result<Bytes, String>;
    fn finish(&mut self) -> Result<Bytes, String>;
}

pub enum UpBody {
    Plain(Incoming),
    Converted(Box<Converted>),
}

pub struct Converted {
    inner: Incoming,
    convert: Box<dyn Convert>,
    ended: bool,
}

impl UpBody {
    pub fn converted(inner: Incoming, convert: Box<dyn Convert>) -> UpBody {
        UpBody::Converted(Box::new(Converted {
            inner,
            convert,
            ended: false,
        }))
    }
}

/// Why a body could not be read: the connection's failure, or bytes that could not be
/// rewritten (a frame with a bad checksum, a stream cut inside a frame).
#[derive(Debug)]
pub enum BodyError {
    Transport(hyper::Error),
    Convert(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Transport(e) => e.fmt(f),
            BodyError::Convert(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Transport(e) => Some(e),
            BodyError::Convert(_) => None,
        }
    }
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            UpBody::Plain(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(BodyError::Transport))),
            UpBody::Converted(c) => loop {
                if c.ended {
                    return Poll::Ready(None);
                }
                let out = match ready!(Pin::new(&mut c.inner).poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => c.convert.push(&data),
                        // Trailers mean nothing to a rewritten body.
                        Err(_) => continue,
                    },
                    Some(Err(e)) => {
                        c.ended = true;
                        return Poll::Ready(Some(Err(BodyError::Transport(e))));
                    }
                    None => {
                        c.ended = true;
                        c.convert.finish()
                    }
                };
                match out {
                    Ok(bytes) if bytes.is_empty() => continue,
                    Ok(bytes) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                    Err(reason) => {
                        c.ended = true;
                        return Poll::Ready(Some(Err(BodyError::Convert(reason))));
                    }
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpBody::Plain(body) => body.is_end_stream(),
            UpBody::Converted(c) => c.ended,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpBody::Plain(body) => body.size_hint(),
            UpBody::Converted(_) => SizeHint::default(),
        }
    }
}

/// A [`Convert`] for a whole body: kept until it ends, then rewritten at once (a Converse
/// answer, an error in a cloud's own shape).
pub struct Whole<F: FnMut(&[u8]) -> Result<Vec<u8>, String> + Send> {
    kept: Vec<u8>,
    limit: usize,
    rewrite: F,
}

impl<F: FnMut(&[u8]) -> Result<Vec<u8>, String> + Send> Whole<F> {
    pub fn new(limit: usize, rewrite: F) -> Self {
        Whole {
            kept: Vec::new(),
            limit,
            rewrite,
        }
    }
}

impl<F: FnMut(&[u8]) -> Result<Vec<u8>, String> + Send> Convert for Whole<F> {
    fn push(&mut self, chunk: &[u8]) -> Result<Bytes, String> {
        if self.kept.len() + chunk.len() > self.limit {
            return Err(format!("response body exceeds {} bytes", self.limit));
        }
        self.kept.extend_from_slice(chunk);
        Ok(Bytes::new())
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        (self.rewrite)(&self.kept).map(Bytes::from)
    }
}
