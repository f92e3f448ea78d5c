//! The browser client: its static files, embedded in the binary, and the routes that serve them.
//!
//! The client is plain ES modules, and what is in `server/web/` is exactly
//! what the browser gets. One of them, `jumpgate-client.js`, is generated:
//! the TypeScript package's protocol 2 room applier, bundled by `npm run
//! bundle:web` in `clients/typescript` (whose tests fail when the checked-in
//! file is stale); the others are written by hand. Every response carries a
//! strong `ETag` and `Cache-Control: no-cache`: browsers revalidate each
//! time and get a bodiless `304` while the binary is unchanged, so a new
//! release never leaves a stale module in a cache.
//!
//! A browser that accepts gzip gets each file gzipped (about a quarter of its
//! size for the modules): compressed once, on the file's first such request,
//! and kept for the life of the process. The gzipped copy has its own ETag,
//! and every answer says `Vary: Accept-Encoding`.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $content_type:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("../web/", $name)),
        }
    };
}

/// The app's page, served at `/` and at `/r/{CODE}` for browsers.
static INDEX: Asset = asset!("index.html", "text/html; charset=utf-8");

/// Everything under `/assets/`.
static ASSETS: &[Asset] = &[
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("connection.js", "text/javascript; charset=utf-8"),
    asset!("protocol.js", "text/javascript; charset=utf-8"),
    asset!("jumpgate-client.js", "text/javascript; charset=utf-8"),
    asset!("board.js", "text/javascript; charset=utf-8"),
    asset!("orbit.js", "text/javascript; charset=utf-8"),
    asset!("lobby.js", "text/javascript; charset=utf-8"),
    asset!("game.js", "text/javascript; charset=utf-8"),
    asset!("play.js", "text/javascript; charset=utf-8"),
    asset!("solo.js", "text/javascript; charset=utf-8"),
    asset!("errors.js", "text/javascript; charset=utf-8"),
    asset!("help.js", "text/javascript; charset=utf-8"),
    asset!("mygames.js", "text/javascript; charset=utf-8"),
    asset!("pace.js", "text/javascript; charset=utf-8"),
    asset!("preview.js", "text/javascript; charset=utf-8"),
    asset!("qr.js", "text/javascript; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
];

/// The routes of the web client (the `/r/{CODE}` page is routed by
/// [`crate::http`], which also answers API clients there).
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*file}", get(asset))
}

/// The app's HTML page.
pub async fn index(headers: HeaderMap) -> Response {
    serve(&INDEX, &headers)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(asset) => serve(asset, &headers),
        None => (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    }
}

/// Whether a request for a lobby page wants the JSON summary rather than the
/// app: an `Accept` header naming `application/json`, or `?format=json`.
pub fn wants_json(headers: &HeaderMap, query: Option<&str>) -> bool {
    let accepts_json = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/json"));
    let asks_json = query
        .unwrap_or("")
        .split('&')
        .any(|pair| pair == "format=json");
    accepts_json || asks_json
}

fn serve(asset: &Asset, headers: &HeaderMap) -> Response {
    let gzipped = accepts_gzip(headers).then(|| gzip_of(asset));
    let plain_tag = etag_of(asset);
    // The gzipped copy is another representation: its own strong validator.
    let etag = match gzipped {
        Some(_) => format!("{}-gz\"", plain_tag.trim_end_matches('"')),
        None => plain_tag.to_owned(),
    };
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == etag));
    let common = [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::ETAG,
            HeaderValue::from_str(&etag).expect("an ETag is ASCII"),
        ),
        (header::VARY, HeaderValue::from_static("accept-encoding")),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    let content_type = (
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    match gzipped {
        Some(body) => (
            common,
            [
                content_type,
                (header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
            ],
            body,
        )
            .into_response(),
        None => (common, [content_type], asset.body).into_response(),
    }
}

/// Whether the request's `Accept-Encoding` takes gzip (and does not refuse
/// it with `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// Gzipped files by name, each compressed once and kept for the process.
type Gzipped = Vec<(&'static str, &'static [u8])>;

/// A file gzipped, compressed on its first request and kept.
fn gzip_of(asset: &Asset) -> &'static [u8] {
    use std::io::Write;
    static GZIPPED: std::sync::Mutex<Gzipped> = std::sync::Mutex::new(Vec::new());
    let mut cache = GZIPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, body)) = cache.iter().find(|(name, _)| *name == asset.name) {
        return body;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(asset.body)
        .expect("writing to memory cannot fail");
    let body: &'static [u8] = encoder
        .finish()
        .expect("writing to memory cannot fail")
        .leak();
    cache.push((asset.name, body));
    body
}

/// A strong validator per file, computed once from its bytes.
fn etag_of(asset: &Asset) -> &'static str {
    static TAGS: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    let tags = TAGS.get_or_init(|| {
        std::iter::once(&INDEX)
            .chain(ASSETS)
            .map(|a| {
                let tag = format!("\"{:08x}-{:x}\"", crc32fast::hash(a.body), a.body.len());
                (a.name, tag)
            })
            .collect()
    });
    tags.iter()
        .find(|(name, _)| *name == asset.name)
        .map(|(_, tag)| tag.as_str())
        .expect("every asset has a tag")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_chosen_by_accept_or_query() {
        let mut headers = HeaderMap::new();
        assert!(!wants_json(&headers, None));
        assert!(wants_json(&headers, Some("format=json")));
        assert!(wants_json(&headers, Some("invite=x&format=json")));
        assert!(!wants_json(&headers, Some("invite=x")));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html,application/xhtml+xml,*/*;q=0.8"),
        );
        assert!(!wants_json(&headers, None));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(wants_json(&headers, None));
    }

    #[test]
    fn gzip_is_chosen_by_accept_encoding_and_round_trips() {
        use std::io::Read;
        let mut headers = HeaderMap::new();
        assert!(!accepts_gzip(&headers));
        for (value, expected) in [
            ("gzip, deflate, br", true),
            ("br;q=1.0, GZIP;q=0.5", true),
            ("gzip;q=0", false),
            ("identity", false),
            ("*", true),
        ] {
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            assert_eq!(accepts_gzip(&headers), expected, "{value}");
        }
        let asset = ASSETS.iter().find(|a| a.name == "game.js").unwrap();
        let packed = gzip_of(asset);
        assert!(packed.len() < asset.body.len() / 2);
        assert!(std::ptr::eq(packed, gzip_of(asset)), "compressed once");
        let mut unpacked = Vec::new();
        flate2::read::GzDecoder::new(packed)
            .read_to_end(&mut unpacked)
            .unwrap();
        assert_eq!(unpacked, asset.body);
    }

    #[test]
    fn every_asset_is_found_and_typed() {
        for asset in ASSETS {
            assert!(!asset.body.is_empty(), "{} is empty", asset.name);
            let ext = asset.name.rsplit('.').next().unwrap();
            let expected = match ext {
                "js" => "text/javascript",
                "css" => "text/css",
                "svg" => "image/svg+xml",
                other => panic!("no content type for .{other}"),
            };
            assert!(asset.content_type.starts_with(expected), "{}", asset.name);
        }
    }
}
