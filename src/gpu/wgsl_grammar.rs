//! A check of our WGSL against the spec's expression grammar, which lets some binary operators
//! share an expression only inside parentheses: `a < b & c`, `a & b | c`, `a + b << 1u`,
//! `a && b || c`, `a < b < c` are errors. naga accepts them but Tint (Chrome) rejects the
//! module, so nothing but this catches them before a browser does. Test-only.
//!
//! The grammar, from loosest: `expression` is a bitwise expression (one of `&` `|` `^` chained
//! over unary expressions, nothing else), or relational expressions all joined by `&&` or all
//! by `||`; a relational expression holds at most one comparison between shift expressions; a
//! shift expression is `unary << unary`, `unary >> unary` or any mix of `+ - * / %`.
//!
//! `<` and `>` also delimit template lists (`array<f32, 4>`, `bitcast<u32>(x)`): the spec tells
//! them apart before parsing by its template list discovery, which `template_lists` follows.

use std::collections::HashSet;

const BITWISE: [&str; 3] = ["&", "|", "^"];
const LOGICAL: [&str; 2] = ["&&", "||"];
const RELATIONAL: [&str; 6] = ["<", ">", "<=", ">=", "==", "!="];
const SHIFT: [&str; 2] = ["<<", ">>"];
const ARITHMETIC: [&str; 5] = ["+", "-", "*", "/", "%"];

/// Multi-character punctuation, longest first (maximal munch).
const PUNCT: [&str; 21] = [
    "<<=", ">>=", "->", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "++", "--",
];

/// Words after which a new expression starts (so `return -a & b` has a unary minus).
const KEYWORDS: &str = "alias break case const const_assert continue continuing default \
    diagnostic discard else enable fn for if let loop override requires return struct switch \
    var while";

fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// Length of the identifier at `i`, 0 if none. Bytes past ASCII count as identifier characters,
/// so that a token never ends inside a UTF-8 sequence.
fn ident_len(s: &[u8], i: usize) -> usize {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    if !word(at(s, i)) || at(s, i).is_ascii_digit() {
        return 0;
    }
    s[i..].iter().take_while(|&&c| word(c)).count()
}

/// Length of the numeric literal at `i` (decimal or hex, int or float, with its suffix), 0 if
/// none. Skipped whole so that `1e-3` has no minus and `1.0f` no identifier `f`.
fn number_len(s: &[u8], i: usize) -> usize {
    let c = at(s, i);
    if !(c.is_ascii_digit() || c == b'.' && at(s, i + 1).is_ascii_digit()) {
        return 0;
    }
    let hex = c == b'0' && matches!(at(s, i + 1), b'x' | b'X');
    let (mut j, exponent) = if hex { (i + 2, b'p') } else { (i, b'e') };
    let digit = |c: u8| c.is_ascii_digit() || c == b'.' || hex && c.is_ascii_hexdigit();
    while digit(at(s, j)) {
        j += 1;
    }
    if at(s, j).to_ascii_lowercase() == exponent {
        let k = j + 1 + matches!(at(s, j + 1), b'+' | b'-') as usize;
        if at(s, k).is_ascii_digit() {
            j = k + s[k..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
    }
    j + matches!(at(s, j), b'i' | b'u' | b'f' | b'h') as usize - i
}

/// The position past blankspace and comments (block comments nest), and literals if asked.
fn skip(s: &[u8], mut i: usize, literals: bool) -> usize {
    loop {
        let start = i;
        while at(s, i).is_ascii_whitespace() {
            i += 1;
        }
        if s[i.min(s.len())..].starts_with(b"//") {
            i += s[i..].iter().take_while(|&&c| c != b'\n').count();
        } else if s[i.min(s.len())..].starts_with(b"/*") {
            let mut depth = 0;
            while i < s.len() {
                match (s[i], at(s, i + 1)) {
                    (b'/', b'*') => (depth, i) = (depth + 1, i + 2),
                    (b'*', b'/') => (depth, i) = (depth - 1, i + 2),
                    _ => i += 1,
                }
                if depth == 0 {
                    break;
                }
            }
        } else if literals {
            // Numbers, and `true` and `false`, the other literals.
            let word = &s[i..i + ident_len(s, i)];
            i += number_len(s, i) + [&b"true"[..], b"false"].contains(&word) as usize * word.len();
        }
        if i == start {
            return i;
        }
    }
}

/// Byte positions of the `<` and `>` that start and end template lists: the spec's "template
/// list discovery" (section Template Lists), step by step. An identifier followed by `<` is a
/// candidate; a `>` at the same ( [ nesting depth closes the latest; `=` (not in `==` `<=` `>=`
/// `!=`), `;` `{` `:` drop all candidates, `)` `]` `&&` `||` those of their depth.
fn template_lists(s: &[u8]) -> (HashSet<usize>, HashSet<usize>) {
    let (mut starts, mut ends) = (HashSet::new(), HashSet::new());
    let mut pending: Vec<(usize, usize)> = Vec::new(); // (position of '<', depth)
    let (mut i, mut depth) = (0, 0);
    let drop_nested = |pending: &mut Vec<(usize, usize)>, depth| {
        while pending.last().is_some_and(|c| c.1 >= depth) {
            pending.pop();
        }
    };
    loop {
        i = skip(s, i, true);
        if i >= s.len() {
            return (starts, ends);
        }
        if let n @ 1.. = ident_len(s, i) {
            i = skip(s, i + n, false);
            if at(s, i) == b'<' {
                i += 1;
                // `<<` and `<=` are operators: no template parameter starts with < or =.
                match at(s, i) {
                    b'<' | b'=' => i += 1,
                    _ => pending.push((i - 1, depth)),
                }
            }
            continue;
        }
        match (s[i], at(s, i + 1)) {
            (b'>', next) => match pending.last() {
                Some(&(start, d)) if d == depth => {
                    pending.pop();
                    starts.insert(start);
                    ends.insert(i);
                    i += 1;
                }
                _ => i += 1 + (next == b'=') as usize,
            },
            (b'(' | b'[', _) => (depth, i) = (depth + 1, i + 1),
            (b')' | b']', _) => {
                drop_nested(&mut pending, depth);
                (depth, i) = (depth.saturating_sub(1), i + 1);
            }
            (b'!', next) | (b'=', next) if next == b'=' => i += 2,
            (b'!', _) => i += 1,
            (b'=' | b';' | b'{' | b':', _) => {
                pending.clear();
                (depth, i) = (0, i + 1);
            }
            (b'&', b'&') | (b'|', b'|') => {
                drop_nested(&mut pending, depth);
                i += 2;
            }
            _ => i += 1,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Word,
    Number,
    /// `(`, `[` or a template list's `<`.
    Open,
    /// `)`, `]` or a template list's `>`.
    Close,
    Punct,
}

/// The tokens of `src` (text, byte offset, kind), comments left out.
fn tokens(src: &str) -> Vec<(&str, usize, Kind)> {
    let s = src.as_bytes();
    let (starts, ends) = template_lists(s);
    let templated =
        |r: std::ops::Range<usize>| r.clone().any(|k| starts.contains(&k) || ends.contains(&k));
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        i = skip(s, i, false);
        if i >= s.len() {
            return out;
        }
        let (len, kind) = match (number_len(s, i), ident_len(s, i)) {
            (n @ 1.., _) => (n, Kind::Number),
            (_, n @ 1..) => (n, Kind::Word),
            _ if starts.contains(&i) || matches!(s[i], b'(' | b'[') => (1, Kind::Open),
            _ if ends.contains(&i) || matches!(s[i], b')' | b']') => (1, Kind::Close),
            _ => {
                // A template's `>` never merges into `>>` or `>=`.
                let multi = PUNCT
                    .iter()
                    .find(|p| s[i..].starts_with(p.as_bytes()) && !templated(i..i + p.len()));
                (multi.map_or(1, |p| p.len()), Kind::Punct)
            }
        };
        out.push((&src[i..i + len], i, kind));
        i += len;
    }
}

/// Why a chain of binary operators (in order, parenthesised parts and unary operators folded
/// into the operands) is not an `expression`: the index of the first operator that breaks the
/// grammar, and a message.
fn violation(ops: &[&str]) -> Option<(usize, String)> {
    let mix = |a: usize, b: usize| {
        let why = format!("`{}` with `{}` needs parentheses", ops[a], ops[b]);
        Some((b, why))
    };
    // A bitwise expression: one operator chained over unary expressions, nothing else.
    if let Some(b) = ops.iter().position(|o| BITWISE.contains(o)) {
        return (ops.iter().position(|&o| o != ops[b])).and_then(|i| mix(i.min(b), i.max(b)));
    }
    // Otherwise where the current operand of each level has its operator, if any: a looser
    // operator ends the operands of the tighter levels.
    let (mut logical, mut relational, mut shift, mut arithmetic) =
        (None::<usize>, None, None, None);
    for (i, &o) in ops.iter().enumerate() {
        if LOGICAL.contains(&o) {
            if let Some(l) = logical.filter(|&l| ops[l] != o) {
                return mix(l, i);
            }
            (logical, relational, shift, arithmetic) = (Some(i), None, None, None);
        } else if RELATIONAL.contains(&o) {
            if let Some(r) = relational {
                return mix(r, i);
            }
            (relational, shift, arithmetic) = (Some(i), None, None);
        } else if SHIFT.contains(&o) {
            // A shift's operands are unary expressions: no arithmetic, no second shift.
            if let Some(x) = shift.or(arithmetic) {
                return mix(x, i);
            }
            shift = Some(i);
        } else {
            if let Some(x) = shift {
                return mix(x, i);
            }
            arithmetic = Some(i);
        }
    }
    None
}

fn binary(op: &str) -> bool {
    [&BITWISE[..], &LOGICAL, &RELATIONAL, &SHIFT, &ARITHMETIC]
        .iter()
        .any(|class| class.contains(&op))
}

/// The operators of one expression being scanned, at one bracket depth.
#[derive(Default)]
struct Segment {
    /// Token indices of its binary operators.
    ops: Vec<usize>,
    /// Whether the last token ended an operand (so a `-` `&` `*` next is binary).
    operand: bool,
    /// Its source bytes so far, for the message.
    span: Option<(usize, usize)>,
}

/// "name:line: why: `snippet`" for every expression of `src` that mixes operators as the WGSL
/// grammar forbids. Each bracketed part (parentheses, index, template list) is its own
/// expression and an operand of the one around it; `,` `;` `{` `}` `:` `=` and other
/// assignments, and statement keywords, end an expression.
fn check(name: &str, src: &str) -> Vec<String> {
    let toks = tokens(src);
    let mut errors = Vec::new();
    let mut finish = |seg: Segment| {
        let ops: Vec<&str> = seg.ops.iter().map(|&k| toks[k].0).collect();
        if let (Some((k, why)), Some((a, b))) = (violation(&ops), seg.span) {
            let line = src[..toks[seg.ops[k]].1].matches('\n').count() + 1;
            let snippet: Vec<&str> = src[a..b].split_whitespace().collect();
            errors.push(format!("{name}:{line}: {why}: `{}`", snippet.join(" ")));
        }
    };
    let mut stack = vec![Segment::default()];
    for (k, &(text, pos, kind)) in toks.iter().enumerate() {
        let end = pos + text.len();
        if kind == Kind::Close && stack.len() > 1 {
            finish(stack.pop().unwrap());
        }
        let seg = stack.last_mut().unwrap();
        let touch = |seg: &mut Segment| seg.span = Some((seg.span.map_or(pos, |s| s.0), end));
        match kind {
            Kind::Open => {
                touch(seg);
                stack.push(Segment::default());
            }
            Kind::Word if KEYWORDS.split_whitespace().any(|w| w == text) => {
                finish(std::mem::take(seg))
            }
            Kind::Word | Kind::Number | Kind::Close => {
                touch(seg);
                seg.operand = true;
            }
            Kind::Punct if seg.operand && binary(text) => {
                touch(seg);
                seg.ops.push(k);
                seg.operand = false;
            }
            // Unary operators and member access: an operand is still to come.
            Kind::Punct if matches!(text, "-" | "!" | "~" | "&" | "*" | ".") => touch(seg),
            Kind::Punct => finish(std::mem::take(seg)),
        }
    }
    stack.into_iter().for_each(finish);
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_a_function(expr: &str) -> Vec<String> {
        check("t", &format!("fn f() {{\n    let x = {expr};\n}}\n"))
    }

    /// Each a separate case (`;` is in none).
    fn cases(list: &str) -> impl Iterator<Item = &str> {
        list.split(';').map(str::trim)
    }

    #[test]
    fn flags_the_mixes_the_grammar_forbids() {
        let invalid = "a < b & c; a & b < c; a & b | c; a && b || c; a & b + c; a + b << 1;
            a << b + 1; a < b < c; a << b << c; a & b && c; a ^ b == c; -a * b >> 1u;
            select(x, y, a < b | c < d); v[i & 3u | j]; f(a, (b == c) & d != e);
            vec2<u32>(a) < vec2(b) & c; array<f32, 4>(a)[i] < 0.0 & b; *p & 1u + q; a <= b >= c";
        for expr in cases(invalid) {
            let errors = in_a_function(expr);
            assert_eq!(errors.len(), 1, "{expr}: {errors:?}");
            assert!(errors[0].starts_with("t:2: "), "{}", errors[0]);
        }
    }

    #[test]
    fn accepts_what_the_grammar_allows() {
        let valid = "a & b & c; a + b < c; (a < b) & (c > d); a && b && c; a < b || c > d;
            a<b || c>d; -a * b + c % d - e / f; (a + b) << 1u; a >> (b + 1u);
            x[(r + i) >> 2u][(r + i) & 3u]; -a & b; !a & !b; ~a ^ b; *p & *q;
            atomicAdd(&x, a & b); vec2<u32>(a) < b; bitcast<u32>(x) & 3u;
            array<vec2<f32>, 4>(a, b, c, d)[i].x + 1.0; select(a, b, a >= b) * 2.0;
            1e-3 * a - b; 0x1p-3 - 0x1e-3 - 1.0f; min(first * BEATS + 3u, p.beats - 1u)";
        for expr in cases(valid) {
            assert_eq!(in_a_function(expr), Vec::<String>::new(), "{expr}");
        }
    }

    #[test]
    fn templates_comments_and_statements() {
        let src = "
var<workgroup> w: array<vec4<f32>, 64>;
fn f(p: ptr<function, array<vec2<f32>, 4>>) -> vec2<f32> {
    var y: u32 = 1u; // a < b & c
    y >>= 1u; y <<= 2u; y &= 3u | 4u; y |= 1u << y;
    /* a & b | c /* nested */ a < b < c */
    for (var i = 0u; i < 4u && y > 0u; i++) { y -= i; }
    if y > 1u { return -(*p)[0] & vec2(1.0); }
    loop { break if y == 0u; }
    return (*p)[y >> 1u];
}";
        assert_eq!(check("t", src), Vec::<String>::new());
        let (starts, ends) = template_lists(src.as_bytes());
        assert_eq!((starts.len(), ends.len()), (7, 7));
        // The spec's own example: a template list, so not two comparisons (and no valid WGSL).
        assert_eq!(template_lists(b"A ( B < C, D > ( E ) )").0.len(), 1);
        // And a mix in a statement is found, with the line.
        let bad = check("t", &src.replace("y -= i;", "y -= i + 1u << 1u;"));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert_eq!(
            bad[0],
            "t:7: `+` with `<<` needs parentheses: `i + 1u << 1u`"
        );
    }

    #[test]
    fn shaders_obey_the_grammar() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
        let mut files = 0;
        let mut errors = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "wgsl") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                errors.extend(check(&name, &std::fs::read_to_string(&path).unwrap()));
                files += 1;
            }
        }
        assert!(files >= 10, "{files} shaders in {dir:?}");
        // What gpu::fft and gpu::cwt compile: their shader with fft_pass.wgsl appended.
        for (name, src) in [
            ("fft + pass", include_str!("../../shaders/fft.wgsl")),
            ("cwt + pass", include_str!("../../shaders/cwt.wgsl")),
        ] {
            errors.extend(check(name, &crate::gpu::fft::with_two_pass(src)));
        }
        assert!(errors.is_empty(), "\n{}", errors.join("\n"));
    }

    /// Every source `HermiteKernels::pipelines` can build: each order, beats a thread (1 to 8),
    /// staged or not (1,024 vec4s, 16 KiB, the most `staged_vec4s` gives; the count only sizes
    /// an array) and 1 or 2 groups a workgroup (what `share_for` gives).
    #[test]
    fn generated_hermite_sources_obey_the_grammar() {
        use crate::dsp::hermite::MAX_ORDER;
        let mut errors = Vec::new();
        for order in 1..=MAX_ORDER {
            for per_thread in 1..=8 {
                for staged in [None, Some(1024)] {
                    for share in [1, 2] {
                        let source =
                            crate::gpu::hermite::fit_source(order, per_thread, staged, share);
                        let name = format!("hermite n{order} b{per_thread} {staged:?} s{share}");
                        errors.extend(check(&name, &source).into_iter().take(3));
                    }
                }
            }
        }
        assert!(
            errors.is_empty(),
            "\n{}",
            errors[..errors.len().min(20)].join("\n")
        );
    }
}
