//! The confinement badge: a flat two-part SVG (`mcpjail | confined`), the same one `scan
//! --badge` writes and the registry site serves, plus the shields.io endpoint JSON for it.
//!
//! Colours are chosen for white text at WCAG AA contrast (≥ 4.5:1).

use super::verdict::Verdict;

/// The badge's message and colour for a verdict.
pub fn message_and_color(verdict: Verdict) -> (&'static str, &'static str) {
    match verdict {
        Verdict::Confined => ("confined", "#1a7f37"),
        Verdict::Launders => ("launders paths", "#cf222e"),
        Verdict::Undeclared => ("undeclared access", "#a34a00"),
        Verdict::Broken => ("broken", "#57606a"),
    }
}

/// Approximate width of `text` in 11px Verdana (what shields-style badges are drawn in).
fn text_width(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '|' | '.' | ',' | ':' | '\'' => 4,
            'm' | 'w' | 'M' | 'W' => 10,
            ' ' => 4,
            _ => 7,
        })
        .sum()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG badge for `verdict`.
pub fn svg(verdict: Verdict) -> String {
    let (message, color) = message_and_color(verdict);
    render("mcpjail", message, color)
}

fn render(label: &str, message: &str, color: &str) -> String {
    let lw = text_width(label) + 12;
    let mw = text_width(message) + 12;
    let w = lw + mw;
    let (label, message) = (escape(label), escape(message));
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" aria-label="{label}: {message}">
<title>{label}: {message}</title>
<rect width="{lw}" height="20" fill="#24292f"/>
<rect x="{lw}" width="{mw}" height="20" fill="{color}"/>
<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">
<text x="{lx}" y="14">{label}</text>
<text x="{mx}" y="14">{message}</text>
</g>
</svg>
"##,
        lx = lw / 2,
        mx = lw + mw / 2,
    )
}

/// shields.io's endpoint schema (`https://img.shields.io/endpoint?url=…`).
pub fn shields_endpoint(verdict: Verdict) -> serde_json::Value {
    let (message, color) = message_and_color(verdict);
    serde_json::json!({
        "schemaVersion": 1,
        "label": "mcpjail",
        "message": message,
        "color": color.trim_start_matches('#'),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_has_its_own_words_and_colour() {
        let confined = svg(Verdict::Confined);
        assert!(confined.contains(">confined<") && confined.contains("#1a7f37"));
        assert!(svg(Verdict::Launders).contains(">launders paths<"));
        assert!(svg(Verdict::Undeclared).contains(">undeclared access<"));
        assert!(svg(Verdict::Broken).contains(">broken<"));
        assert_eq!(shields_endpoint(Verdict::Launders)["color"], "cf222e");
    }
}
