//! Synthetic images for vision-language requests (`--image WxH[,COUNT]`): each chat request
//! carries COUNT PNG images as base64 data URLs in `image_url` parts after its text.
//!
//! Every image is **distinct**: its pixels are seeded by the run's seed, the request and the
//! image's place in it. A server that caches image encodings by content (vLLM's multimodal
//! cache hashes the pixels) would otherwise answer repeats from its cache and flatter itself.
//! The picture is a smooth gradient with a seeded tint per 16×16 block, so it compresses about
//! as a photograph does rather than as noise (which no codec shrinks) or a flat colour (which
//! every codec erases); the bytes each request carries are reported beside the latencies.

use base64::Engine as _;

pub use yardstick_spec::images::{COUNT, ImageSpec, ImageSpecError, SIDE};

/// A PNG of `width × height` whose pixels are seeded by `seed` (see the module docs). Integer
/// arithmetic only: a channel is its seeded base, plus its horizontal and vertical ramps, plus
/// its block's tint, modulo 256.
pub fn png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut rng = crate::rng::Rng::new(seed, 0x1A6E);
    let base: [i32; 3] = std::array::from_fn(|_| (rng.next_u64() % 256) as i32);
    let dx: [i32; 3] = std::array::from_fn(|_| (rng.next_u64() % 161) as i32 - 80);
    let dy: [i32; 3] = std::array::from_fn(|_| (rng.next_u64() % 161) as i32 - 80);
    let (w, h) = (width as usize, height as usize);
    let bw = w.div_ceil(16);
    let tint: Vec<[i32; 3]> = (0..bw * h.div_ceil(16))
        .map(|_| {
            let v = rng.next_u64();
            [
                (v & 31) as i32,
                ((v >> 8) & 31) as i32,
                ((v >> 16) & 31) as i32,
            ]
        })
        .collect();
    // Each column's horizontal ramp, once.
    let ramp: Vec<[i32; 3]> = (0..w)
        .map(|x| std::array::from_fn(|c| dx[c] * x as i32 / w as i32))
        .collect();
    let mut data = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let row: [i32; 3] = std::array::from_fn(|c| base[c] + dy[c] * y as i32 / h as i32);
        let tints = &tint[(y / 16) * bw..(y / 16 + 1) * bw];
        for (x, r) in ramp.iter().enumerate() {
            let t = &tints[x / 16];
            for c in 0..3 {
                data.push(((row[c] + r[c] + t[c]) & 0xff) as u8);
            }
        }
    }
    let mut out = Vec::with_capacity(data.len() / 2);
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    // Writing to memory cannot fail for a valid size (checked by `ImageSpec`).
    if let Ok(mut w) = enc.write_header() {
        let _ = w.write_image_data(&data);
    }
    out
}

/// `data:image/png;base64,…` of a PNG.
pub fn data_url(png: &[u8]) -> String {
    let mut s = String::with_capacity(22 + png.len().div_ceil(3) * 4);
    s.push_str("data:image/png;base64,");
    base64::engine::general_purpose::STANDARD.encode_string(png, &mut s);
    s
}

/// The image parts of request `index` of a run seeded `seed`: `(data URLs, bytes of the PNGs)`.
pub fn for_request(spec: &ImageSpec, seed: u64, index: u64) -> (Vec<String>, u64) {
    let mut urls = Vec::with_capacity(spec.count as usize);
    let mut bytes = 0u64;
    for k in 0..spec.count {
        let image_seed = seed
            ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ u64::from(k).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        let p = png(spec.width, spec.height, image_seed);
        bytes += p.len() as u64;
        urls.push(data_url(&p));
    }
    (urls, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_refuse_bad_input() {
        assert_eq!(
            "512x512".parse::<ImageSpec>().unwrap(),
            ImageSpec {
                width: 512,
                height: 512,
                count: 1
            }
        );
        let s: ImageSpec = "1024X768, 2".parse().unwrap();
        assert_eq!((s.width, s.height, s.count), (1024, 768, 2));
        assert_eq!(s.to_string(), "1024x768,2");
        for (bad, says) in [
            ("512", "no `x`"),
            ("ax512", "width `a`"),
            ("512x8", "16 to 4096"),
            ("512x512,0", "1 to 16"),
            ("512x512,two", "count `two`"),
        ] {
            let e = bad.parse::<ImageSpec>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn images_are_valid_pngs_distinct_per_request_and_reproducible() {
        let spec: ImageSpec = "64x48,2".parse().unwrap();
        let (a, bytes) = for_request(&spec, 7, 3);
        assert_eq!(a.len(), 2);
        assert_ne!(a[0], a[1]);
        assert_eq!(for_request(&spec, 7, 3).0, a);
        assert_ne!(for_request(&spec, 7, 4).0[0], a[0]);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(a[0].strip_prefix("data:image/png;base64,").unwrap())
            .unwrap();
        assert!(bytes > 2 * 100 && bytes >= raw.len() as u64);
        let decoder = png::Decoder::new(std::io::Cursor::new(raw));
        let reader = decoder.read_info().unwrap();
        let info = reader.info();
        assert_eq!((info.width, info.height), (64, 48));
    }
}
