//! The file's bytes as they stream past: counted and hashed, so a file is read once.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

#[derive(Debug)]
pub struct Source<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Source<R> {
    pub fn new(inner: R) -> Self {
        Source {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Reads what the format's reader left (trailing whitespace), so the hash is the
    /// whole file's.
    pub fn drain(&mut self) -> io::Result<()> {
        io::copy(self, &mut io::sink()).map(|_| ())
    }

    pub fn byte_count(&self) -> u64 {
        self.bytes
    }

    pub fn sha256_hex(&self) -> String {
        let digest = self.hasher.clone().finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.hasher.update(&out[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}
