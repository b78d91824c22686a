//! The request-response codec: libp2p's CBOR codec with the frame limits
//! set, wrapped so that a request that cannot be read (garbled, oversize,
//! truncated) is logged here. libp2p itself drops such a stream with only a
//! debug line and tells the behaviour nothing.

use std::io;

use libp2p::StreamProtocol;
use libp2p::futures::{AsyncRead, AsyncWrite};
use libp2p::request_response::{self, Codec};

use crate::wire::{MAX_FRAME_BYTES, Request, Response};

type Inner = request_response::cbor::codec::Codec<Request, Response>;

#[derive(Clone)]
pub struct FleetCodec(Inner);

impl Default for FleetCodec {
    fn default() -> FleetCodec {
        FleetCodec(
            Inner::default()
                .set_request_size_maximum(MAX_FRAME_BYTES)
                .set_response_size_maximum(MAX_FRAME_BYTES),
        )
    }
}

impl Codec for FleetCodec {
    type Protocol = StreamProtocol;
    type Request = Request;
    type Response = Response;

    async fn read_request<T>(&mut self, protocol: &StreamProtocol, io: &mut T) -> io::Result<Request>
    where
        T: AsyncRead + Unpin + Send,
    {
        let read = self.0.read_request(protocol, io).await;
        if let Err(e) = &read {
            tracing::warn!(error = %e, "a fabric request could not be read (garbled, cut short by an asker that gave up, or over {MAX_FRAME_BYTES} bytes): refused");
        }
        read
    }

    async fn read_response<T>(&mut self, protocol: &StreamProtocol, io: &mut T) -> io::Result<Response>
    where
        T: AsyncRead + Unpin + Send,
    {
        let read = self.0.read_response(protocol, io).await;
        if let Err(e) = &read {
            tracing::warn!(error = %e, "a fabric response could not be read");
        }
        read
    }

    async fn write_request<T>(&mut self, protocol: &StreamProtocol, io: &mut T, req: Request) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        self.0.write_request(protocol, io, req).await
    }

    async fn write_response<T>(&mut self, protocol: &StreamProtocol, io: &mut T, res: Response) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        self.0.write_response(protocol, io, res).await
    }
}
