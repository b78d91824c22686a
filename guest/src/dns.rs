//! The guest's resolver: a guest has no network, and its `/etc/resolv.conf`
//! names `127.0.0.1`, where this listens (UDP port 53, which the container
//! lets an unprivileged user bind). Each question goes to the node over the
//! egress socket (`RESOLVE name`); the node answers the names the agent's
//! model endpoints and grants name, and records the rest, which get
//! NXDOMAIN here. Only A and AAAA questions get addresses.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UdpSocket, UnixStream};

/// `WARREN_GUEST_DNS`: the egress socket to ask.
pub const DNS: &str = "WARREN_GUEST_DNS";
/// How long the node has to answer one question.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// Most questions in flight at once.
const MAX_IN_FLIGHT: usize = 64;
/// The node's answer is read up to this many bytes.
const MAX_ANSWER: u64 = 8 * 1024;

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const RCODE_SERVFAIL: u8 = 2;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_FORMERR: u8 = 1;

/// One question, as read from a query packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub id: u16,
    /// The query's "recursion desired" bit, echoed.
    pub rd: bool,
    pub name: String,
    pub qtype: u16,
    /// The question section's bytes (name, type, class), echoed.
    pub question: Vec<u8>,
}

/// Reads a standard query with one question; None for anything else.
pub fn parse_query(packet: &[u8]) -> Option<Query> {
    if packet.len() < 12 {
        return None;
    }
    let id = u16::from_be_bytes([packet[0], packet[1]]);
    let flags = u16::from_be_bytes([packet[2], packet[3]]);
    let qdcount = u16::from_be_bytes([packet[4], packet[5]]);
    // A query (QR 0), standard (opcode 0), one question.
    if flags & 0x8000 != 0 || (flags >> 11) & 0xf != 0 || qdcount != 1 {
        return None;
    }
    let mut at = 12;
    let mut labels: Vec<String> = vec![];
    loop {
        let len = *packet.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        // No compression in a question; labels of at most 63 bytes.
        if len > 63 {
            return None;
        }
        let label = packet.get(at..at + len)?;
        labels.push(String::from_utf8(label.to_vec()).ok()?.to_ascii_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*packet.get(at)?, *packet.get(at + 1)?]);
    packet.get(at + 2..at + 4)?;
    Some(Query {
        id,
        rd: flags & 0x0100 != 0,
        name: labels.join("."),
        qtype,
        question: packet[12..at + 4].to_vec(),
    })
}

/// The response to `q`: `rcode`, and an answer record for each address of
/// the question's type (TTL 30 s).
pub fn response(q: &Query, rcode: u8, addrs: &[IpAddr]) -> Vec<u8> {
    let records: Vec<Vec<u8>> = addrs
        .iter()
        .filter_map(|ip| match (ip, q.qtype) {
            (IpAddr::V4(v4), TYPE_A) => Some((TYPE_A, v4.octets().to_vec())),
            (IpAddr::V6(v6), TYPE_AAAA) => Some((TYPE_AAAA, v6.octets().to_vec())),
            _ => None,
        })
        .map(|(t, data)| {
            // The name is a pointer to the question's (offset 12).
            let mut r = vec![0xc0, 0x0c];
            r.extend_from_slice(&t.to_be_bytes());
            r.extend_from_slice(&1u16.to_be_bytes());
            r.extend_from_slice(&30u32.to_be_bytes());
            r.extend_from_slice(&(data.len() as u16).to_be_bytes());
            r.extend_from_slice(&data);
            r
        })
        .collect();
    let flags: u16 = 0x8000 | if q.rd { 0x0100 } else { 0 } | 0x0080 | rcode as u16;
    let mut out = Vec::with_capacity(12 + q.question.len() + records.len() * 28);
    out.extend_from_slice(&q.id.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(records.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&q.question);
    for r in records {
        out.extend_from_slice(&r);
    }
    out
}

/// A FORMERR answer for a packet that is no query this resolver reads.
fn format_error(packet: &[u8]) -> Option<Vec<u8>> {
    let id = packet.get(0..2)?;
    let mut out = id.to_vec();
    out.extend_from_slice(&(0x8000u16 | RCODE_FORMERR as u16).to_be_bytes());
    out.extend_from_slice(&[0; 8]);
    Some(out)
}

/// Binds 127.0.0.1:53 and answers there in the background.
pub async fn start(egress: &str) -> anyhow::Result<()> {
    let socket = UdpSocket::bind(("127.0.0.1", 53)).await?;
    tokio::spawn(serve(Arc::new(socket), Arc::new(PathBuf::from(egress))));
    Ok(())
}

async fn serve(socket: Arc<UdpSocket>, egress: Arc<PathBuf>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut buf = vec![0u8; 1500];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let packet = buf[..n].to_vec();
        let Some(q) = parse_query(&packet) else {
            if let Some(e) = format_error(&packet) {
                let _ = socket.send_to(&e, from).await;
            }
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let (socket, egress) = (socket.clone(), egress.clone());
        tokio::spawn(async move {
            let answer = match tokio::time::timeout(ASK_TIMEOUT, ask(&egress, &q.name)).await {
                Ok(Ok(Some(addrs))) => response(&q, 0, &addrs),
                Ok(Ok(None)) => response(&q, RCODE_NXDOMAIN, &[]),
                _ => response(&q, RCODE_SERVFAIL, &[]),
            };
            let _ = socket.send_to(&answer, from).await;
            drop(permit);
        });
    }
}

/// The node's addresses for `name`; None when it refused to look it up.
async fn ask(egress: &PathBuf, name: &str) -> std::io::Result<Option<Vec<IpAddr>>> {
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '/') {
        return Ok(None);
    }
    let mut s = UnixStream::connect(egress).await?;
    s.write_all(format!("RESOLVE {name} HTTP/1.1\r\n\r\n").as_bytes())
        .await?;
    let mut text = String::new();
    s.take(MAX_ANSWER).read_to_string(&mut text).await?;
    if !text.starts_with("HTTP/1.1 200") {
        return Ok(None);
    }
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok(Some(body.lines().filter_map(|l| l.trim().parse().ok()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query for `name` of `qtype` with id 0x1234, recursion desired.
    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut p = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            p.push(label.len() as u8);
            p.extend_from_slice(label.as_bytes());
        }
        p.push(0);
        p.extend_from_slice(&qtype.to_be_bytes());
        p.extend_from_slice(&1u16.to_be_bytes());
        p
    }

    #[test]
    fn a_query_is_read_and_answered() {
        let q = parse_query(&query("Api.Example.com", TYPE_A)).expect("query");
        assert_eq!(
            (q.id, q.rd, q.name.as_str(), q.qtype),
            (0x1234, true, "api.example.com", TYPE_A)
        );
        let ips: Vec<IpAddr> = vec!["192.0.2.7".parse().unwrap(), "2001:db8::1".parse().unwrap()];
        let r = response(&q, 0, &ips);
        assert_eq!(&r[0..2], &[0x12, 0x34]);
        assert_eq!(
            u16::from_be_bytes([r[2], r[3]]),
            0x8180,
            "a response, RD and RA, no error"
        );
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1, "only the A record");
        assert_eq!(&r[r.len() - 4..], &[192, 0, 2, 7]);
        let r = response(&q, RCODE_NXDOMAIN, &[]);
        assert_eq!(r[3] & 0x0f, RCODE_NXDOMAIN);
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 0);
    }

    #[test]
    fn what_is_no_plain_query_is_not_read() {
        let mut answer = query("a.b", TYPE_A);
        answer[2] |= 0x80;
        let mut two = query("a.b", TYPE_A);
        two[5] = 2;
        let mut long = query("a.b", TYPE_A);
        long[12] = 64;
        for bad in [vec![1, 2, 3], answer, two, long, query("a.b", TYPE_A)[..14].to_vec()] {
            assert_eq!(parse_query(&bad), None, "{bad:?}");
        }
        assert_eq!(format_error(&[9, 9, 0]).expect("id")[3] & 0x0f, RCODE_FORMERR);
    }
}
