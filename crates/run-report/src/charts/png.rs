//! PNG encoding of a drawn RGB buffer, in memory (the HTML report embeds the
//! PNGs as data URIs, and the report writer writes them atomically).

/// Encode an 8-bit RGB buffer of `w` x `h` pixels as PNG (default compression: about 5x smaller than fast, ~0.1 s for the wave chart in release).
pub fn encode_rgb(buf: &[u8], w: u32, h: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::with_capacity(buf.len() / 8);
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        let mut writer = enc.write_header()?;
        writer.write_image_data(buf)?;
        writer.finish()?;
    }
    Ok(out)
}
