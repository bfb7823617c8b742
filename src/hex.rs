//! Bytes as lower-case hex, for ids, tokens and hashes: one table lookup a nibble, into one
//! string sized once (a `format!` a byte was sixteen allocations for a 128-bit hash).

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` to `out` in hex.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// `bytes` in hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    push_hex(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_digits_a_byte_lower_case() {
        assert_eq!(super::hex(&[0, 9, 10, 255, 0x5a]), "00090aff5a");
        let mut s = "tok-".to_string();
        super::push_hex(&mut s, &[1, 0xab]);
        assert_eq!(s, "tok-01ab");
    }
}
