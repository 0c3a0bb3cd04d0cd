//! The images a serving request carries (`--image WxH[,COUNT]`, `images:` in specs): the one
//! grammar both the command line and the spec validator read.

/// Image sizes accepted, pixels per side.
pub const SIDE: std::ops::RangeInclusive<u32> = 16..=4096;
/// Images per request accepted.
pub const COUNT: std::ops::RangeInclusive<u32> = 1..=16;

/// The images of every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageSpec {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Images per request.
    pub count: u32,
}

/// Why an image spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}`: {why} (expected WxH or WxH,COUNT, e.g. 512x512 or 1024x768,2)")]
pub struct ImageSpecError {
    /// As written.
    pub given: String,
    /// What is wrong.
    pub why: String,
}

impl std::str::FromStr for ImageSpec {
    type Err = ImageSpecError;
    fn from_str(s: &str) -> Result<ImageSpec, ImageSpecError> {
        let err = |why: String| ImageSpecError {
            given: s.to_string(),
            why,
        };
        let (size, count) = match s.split_once(',') {
            Some((size, n)) => (
                size,
                n.trim()
                    .parse::<u32>()
                    .map_err(|_| err(format!("the count `{}` is not a whole number", n.trim())))?,
            ),
            None => (s, 1),
        };
        let (w, h) = size
            .trim()
            .split_once(['x', 'X'])
            .ok_or_else(|| err("no `x` between width and height".into()))?;
        let side = |v: &str, what: &str| -> Result<u32, ImageSpecError> {
            let n: u32 = v
                .trim()
                .parse()
                .map_err(|_| err(format!("the {what} `{}` is not a whole number", v.trim())))?;
            if !SIDE.contains(&n) {
                return Err(err(format!(
                    "the {what} must be {} to {} pixels, got {n}",
                    SIDE.start(),
                    SIDE.end()
                )));
            }
            Ok(n)
        };
        let spec = ImageSpec {
            width: side(w, "width")?,
            height: side(h, "height")?,
            count,
        };
        if !COUNT.contains(&count) {
            return Err(err(format!(
                "the count must be {} to {}, got {count}",
                COUNT.start(),
                COUNT.end()
            )));
        }
        Ok(spec)
    }
}

impl std::fmt::Display for ImageSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)?;
        if self.count != 1 {
            write!(f, ",{}", self.count)?;
        }
        Ok(())
    }
}
