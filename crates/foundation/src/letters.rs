//! Letters in the one form every comparison reads: look-alikes (Cyrillic, Greek, fullwidth) as
//! the Latin letters they imitate, and whole texts folded (hidden characters gone, NFKC, dot
//! leaders, lower case). Below both the content check (`trust`) and the action gate (`gate`).

/// Latin look-alikes (Cyrillic, Greek, fullwidth) read as the Latin letters they imitate.
pub fn fold_char(c: char) -> char {
    match c {
        'а' => 'a',
        'е' => 'e',
        'о' => 'o',
        'р' => 'p',
        'с' => 'c',
        'у' => 'y',
        'х' => 'x',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'ɡ' => 'g',
        'һ' => 'h',
        'ӏ' => 'l',
        'ο' => 'o',
        'α' => 'a',
        'ε' => 'e',
        'ι' => 'i',
        'κ' => 'k',
        'ν' => 'v',
        'ρ' => 'p',
        'τ' => 't',
        'υ' => 'u',
        'χ' => 'x',
        'ѵ' => 'v',
        'ԝ' => 'w',
        'ց' => 'g',
        'ꮪ' => 's',
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c),
        '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        _ => c,
    }
}

/// A text in the one form every comparison reads: hidden characters gone, NFKC (mathematical,
/// fullwidth and compatibility letters to plain ones), look-alike letters to Latin, dot leaders to
/// dots, lower case.
pub fn fold(text: &str) -> String {
    nfkc_lower(&crate::hidden::visible(text))
        .chars()
        // Ideographic full stops end sentences in prose, but split a host's labels all the same.
        .map(|c| match c {
            '\u{3002}' | '\u{FF61}' => '.',
            c => fold_char(c),
        })
        .collect()
}

/// NFKC (mathematical, fullwidth and compatibility letters to plain ones), dot leaders as dots,
/// lower case; no look-alike folding, which would turn Cyrillic words the content check's rules
/// know into mixed letters.
pub fn nfkc_lower(text: &str) -> String {
    icu_normalizer::ComposingNormalizerBorrowed::new_nfkc()
        .normalize(text)
        .chars()
        .map(|c| match c {
            '\u{2024}' | '\u{FF0E}' | '\u{2E33}' | '\u{0701}' => '.',
            c => c,
        })
        .flat_map(char::to_lowercase)
        .collect()
}
