//! Classic pcap files of the packets the fabric forwards, for Wireshark and tshark.
//!
//! The TUN devices hand over bare IPv4 packets, so records are `LINKTYPE_RAW` with no link header. The
//! format is the nanosecond variant (magic `a1b23c4d`), the one `tailcut trace` writes
//! (`python/tailcut/pcap.py`); that writer is Python and synthesizes its packets from events, so the
//! two share only this 24-byte + 16-byte framing, not code.
//!
//! A capture is bounded twice: each record keeps at most `snaplen` bytes of its packet (headers are
//! what TCP analysis needs; the payload would multiply the file by 10-20 at 1500 B), and a file stops
//! growing at `max_bytes`, so that a long run cannot fill the disk. Records past the bound are counted,
//! not written, and the file stays a valid pcap that ends early.

use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Nanosecond-resolution pcap, written in the machine's byte order (readers detect it by the magic).
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Raw IP: each record starts with the IPv4 header.
pub const LINKTYPE_RAW: u32 = 101;
/// Bytes of the file header.
pub const FILE_HEADER: u64 = 24;
/// Bytes of each record's header.
pub const RECORD_HEADER: u64 = 16;

/// What a capture wrote, reported in `testbed.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CaptureStats {
    /// The file's name (no folder), so a report can point to it.
    pub file: String,
    pub records: u64,
    /// Size of the file, header included.
    pub bytes: u64,
    /// Packets that were not written because the file reached its bound or a write failed: the
    /// capture is complete only when this is 0.
    pub not_written: u64,
    /// The write error that ended the capture, if any (e.g. a full disk).
    pub error: Option<String>,
}

/// Where a testbed writes its two captures, and their bounds.
#[derive(Clone, Debug)]
pub struct CaptureSpec {
    pub dir: PathBuf,
    /// Put before `sent.pcap` and `delivered.pcap` (one run writes one pair per scheme).
    pub prefix: String,
    pub snaplen: u32,
    /// Bound on each file, header included.
    pub max_bytes: u64,
}

impl CaptureSpec {
    /// Every packet a host wrote to its NIC, as the fabric read it.
    pub fn sent_path(&self) -> PathBuf {
        self.dir.join(format!("{}sent.pcap", self.prefix))
    }

    /// Every packet the fabric wrote to a host's NIC, as written (CE marks included).
    pub fn delivered_path(&self) -> PathBuf {
        self.dir.join(format!("{}delivered.pcap", self.prefix))
    }
}

/// The two captures of a running fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CaptureReport {
    pub sent: CaptureStats,
    pub delivered: CaptureStats,
}

/// Large enough that a write system call carries ~2000 header-sized records.
const FILE_BUFFER: usize = 256 * 1024;

pub type PcapFile = PcapWriter<BufWriter<File>>;

/// Creates (or truncates) `path` and writes its pcap header.
pub fn create(path: &Path, snaplen: u32, max_bytes: u64) -> Result<PcapFile, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    File::create(path)
        .and_then(|f| {
            PcapWriter::new(
                BufWriter::with_capacity(FILE_BUFFER, f),
                &name,
                snaplen,
                max_bytes,
            )
        })
        .map_err(|e| format!("pcap {}: {e}", path.display()))
}

/// The open files of [`CaptureSpec`].
pub struct Capture {
    pub sent: PcapFile,
    pub delivered: PcapFile,
}

impl Capture {
    pub fn create(spec: &CaptureSpec) -> Result<Capture, String> {
        std::fs::create_dir_all(&spec.dir).map_err(|e| format!("pcap {}: {e}", spec.dir.display()))?;
        Ok(Capture {
            sent: create(&spec.sent_path(), spec.snaplen, spec.max_bytes)?,
            delivered: create(&spec.delivered_path(), spec.snaplen, spec.max_bytes)?,
        })
    }

    pub fn finish(self) -> CaptureReport {
        CaptureReport {
            sent: self.sent.finish(),
            delivered: self.delivered.finish(),
        }
    }
}

pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
    max_bytes: u64,
    /// Once set, nothing more is written: a capture never resumes after a gap, so that what it holds
    /// is everything up to the moment it stopped.
    stopped: bool,
    stats: CaptureStats,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `max_bytes` bounds the whole file, header included.
    pub fn new(mut out: W, file: &str, snaplen: u32, max_bytes: u64) -> io::Result<PcapWriter<W>> {
        let mut h = [0u8; FILE_HEADER as usize];
        h[0..4].copy_from_slice(&MAGIC_NS.to_ne_bytes());
        h[4..6].copy_from_slice(&2u16.to_ne_bytes());
        h[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // Bytes 8..16: timezone offset and accuracy, always 0.
        h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_RAW.to_ne_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            snaplen,
            max_bytes,
            stopped: false,
            stats: CaptureStats {
                file: file.to_string(),
                bytes: FILE_HEADER,
                ..CaptureStats::default()
            },
        })
    }

    /// Appends one packet stamped `ts_ns` (ns since the Unix epoch). Never fails: a packet that does
    /// not fit, or a write error, stops the capture and is counted in [`CaptureStats::not_written`].
    #[inline]
    pub fn write(&mut self, ts_ns: u64, packet: &[u8]) {
        let incl = packet.len().min(self.snaplen as usize);
        let size = RECORD_HEADER + incl as u64;
        if self.stopped || self.stats.bytes + size > self.max_bytes {
            self.stopped = true;
            self.stats.not_written += 1;
            return;
        }
        let mut h = [0u8; RECORD_HEADER as usize];
        h[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_ne_bytes());
        h[8..12].copy_from_slice(&(incl as u32).to_ne_bytes());
        h[12..16].copy_from_slice(&(packet.len() as u32).to_ne_bytes());
        if let Err(e) = self
            .out
            .write_all(&h)
            .and_then(|()| self.out.write_all(&packet[..incl]))
        {
            self.fail(e);
            return;
        }
        self.stats.records += 1;
        self.stats.bytes += size;
    }

    fn fail(&mut self, e: io::Error) {
        self.stopped = true;
        self.stats.not_written += 1;
        self.stats.error.get_or_insert_with(|| e.to_string());
    }

    /// Flushes the file and returns what was written.
    pub fn finish(mut self) -> CaptureStats {
        if let Err(e) = self.out.flush() {
            self.stats.error.get_or_insert_with(|| e.to_string());
        }
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_ne_bytes(b[i..i + 4].try_into().unwrap())
    }

    #[test]
    fn records_are_cut_at_snaplen_and_keep_their_length_and_time() {
        let mut w = PcapWriter::new(Vec::new(), "x.pcap", 4, 1 << 20).unwrap();
        w.write(3_000_000_123, &[1, 2, 3, 4, 5, 6]);
        w.write(7, &[9]);
        let stats = w.stats.clone();
        let b = w.out;
        assert_eq!(u32_at(&b, 0), MAGIC_NS);
        assert_eq!(u32_at(&b, 20), LINKTYPE_RAW);
        let r = &b[24..];
        assert_eq!(
            (u32_at(r, 0), u32_at(r, 4), u32_at(r, 8), u32_at(r, 12)),
            (3, 123, 4, 6)
        );
        assert_eq!(&r[16..20], &[1, 2, 3, 4]);
        let r = &r[20..];
        assert_eq!(
            (u32_at(r, 0), u32_at(r, 4), u32_at(r, 8), u32_at(r, 12)),
            (0, 7, 1, 1)
        );
        assert_eq!(r[16], 9);
        assert_eq!(stats.records, 2);
        assert_eq!(stats.bytes, b.len() as u64);
    }

    #[test]
    fn the_file_stops_at_its_bound_and_counts_what_it_left_out() {
        // Room for the header, two 10-byte records and one empty one.
        let two = FILE_HEADER + 2 * (RECORD_HEADER + 10);
        let mut w = PcapWriter::new(Vec::new(), "x.pcap", 128, two + RECORD_HEADER).unwrap();
        for _ in 0..2 {
            w.write(1, &[0; 10]);
        }
        w.write(1, &[0; 11]);
        // It would fit, but a capture with a hole in it would mislead TCP analysis.
        w.write(1, &[]);
        let len = w.out.len() as u64;
        let stats = w.finish();
        assert_eq!((stats.records, stats.not_written, stats.bytes), (2, 2, two));
        assert_eq!(len, two);
        assert_eq!(stats.error, None);
    }

    #[test]
    fn a_write_error_ends_the_capture_and_is_reported() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = PcapWriter {
            out: Full,
            snaplen: 128,
            max_bytes: u64::MAX,
            stopped: false,
            stats: CaptureStats::default(),
        };
        w.write(1, &[0; 40]);
        w.write(2, &[0; 40]);
        let stats = w.finish();
        assert_eq!((stats.records, stats.not_written), (0, 2));
        assert_eq!(stats.error.as_deref(), Some("disk full"));
    }
}
