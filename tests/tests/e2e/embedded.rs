//! What only the embedded store (the data directory) has to prove, with
//! real `jumpgate serve` processes: a staked series start cut by kill -9
//! takes nothing from anyone (read from the data file itself while the
//! server is down), a second process on one directory is refused, a torn
//! or foreign data file is refused and left as it was, and the server
//! says which store it runs on.

use std::path::Path;
use std::time::Duration;

use jumpgate_e2e::{DataDir, JumpgateProcess, PATIENCE, Player, account_token, lobby_pair};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RuleSet};

use crate::faults::staked_lobby;
use jumpgate_server::store::embedded::{DATA_FILE, Db, OpenError};

const ISSUER_SECRET: &[u8] = b"embedded-issuer-secret-0123456789abcdef";
const ADMIN: &str = "embedded-admin-token-0123456789abcdef";

fn token(sub: &str) -> String {
    account_token(ISSUER_SECRET, sub, &format!("Name {sub}"))
}

/// A server on `dir` with accounts and the operator API on `admin`.
fn staked_env(dir: &DataDir, admin: std::net::SocketAddr) -> Vec<(&'static str, String)> {
    let mut env = dir.env();
    env.extend([
        ("JUMPGATE_RESUME_GRACE_MS", "5000".to_owned()),
        ("JUMPGATE_JWT_ISSUER", "https://id.test".to_owned()),
        (
            "JUMPGATE_JWT_HS256",
            format!("k1={}", std::str::from_utf8(ISSUER_SECRET).unwrap()),
        ),
        ("JUMPGATE_ADMIN_TOKEN", ADMIN.to_owned()),
        ("JUMPGATE_ADMIN_LISTEN", admin.to_string()),
    ]);
    env
}

/// The data file of a directory no server runs on.
///
/// Waits while it is locked, for a moment at most: a process that another
/// test is starting can hold a copy of this process's lock between its
/// `fork` and its `exec` (an `flock` belongs to the open file, which a
/// forked child shares until `exec` closes it). The servers themselves
/// start no processes.
pub(crate) async fn open_while_down(dir: &Path) -> Db {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match Db::open(dir) {
            Ok(db) => return db,
            Err(OpenError::Locked(_)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("the server is down: the directory opens ({e})"),
        }
    }
}

/// What the data file says about the money, read while no server runs:
/// balances plus escrow equal everything granted, the escrow total is
/// what the escrow rows hold, no balance is negative, and no ledger key
/// was applied twice or paid without its stake. Returns the escrow.
async fn conserved_on_disk(dir: &Path) -> i64 {
    let db = open_while_down(dir).await;
    let (balances, lowest, escrow, held, granted, twice, unstaked) = db
        .call(|t| {
            t.conn.query_row(
                "SELECT (SELECT coalesce(sum(balance), 0) FROM wallet_accounts),
                        (SELECT coalesce(min(balance), 0) FROM wallet_accounts),
                        (SELECT coalesce(max(escrow), 0) FROM wallet_totals),
                        (SELECT coalesce(sum(amount), 0) FROM wallet_escrow),
                        (SELECT coalesce(max(granted), 0) FROM wallet_totals),
                        (SELECT count(*) FROM (SELECT 1 FROM wallet_ledger
                            GROUP BY account, key HAVING count(*) > 1)),
                        (SELECT count(*) FROM wallet_ledger s WHERE s.key LIKE '%:settle'
                            AND NOT EXISTS (SELECT 1 FROM wallet_ledger e
                                WHERE e.account = s.account
                                AND e.key = substr(s.key, 1, length(s.key) - 7) || ':escrow'))",
                [],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                },
            )
        })
        .await
        .unwrap();
    assert!(lowest >= 0, "a balance is negative ({lowest})");
    assert_eq!(balances + escrow, granted, "balances + escrow = granted");
    assert_eq!(held, escrow, "the escrow total is what the rows hold");
    assert_eq!(twice, 0, "a ledger key applied twice");
    assert_eq!(unstaked, 0, "paid or refunded without staking");
    escrow
}

async fn balance_on_disk(dir: &Path, account: &str) -> i64 {
    let account = account.to_owned();
    let db = open_while_down(dir).await;
    db.call(move |t| {
        t.conn.query_row(
            "SELECT coalesce(max(balance), 0) FROM wallet_accounts WHERE account = ?1",
            [account],
            |r| r.get(0),
        )
    })
    .await
    .unwrap()
}

/// The balance the operator API shows.
async fn balance(admin: std::net::SocketAddr, account: &str) -> i64 {
    let path = format!("/api/admin/wallets/{account}");
    let auth = format!("Bearer {ADMIN}");
    let (status, response) =
        jumpgate_e2e::http_get_with(admin, &path, &[("Authorization", &auth)]).await;
    assert_eq!(status, 200, "{response}");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let start = body.find('{').unwrap();
    let end = body.rfind('}').unwrap();
    let json: serde_json::Value = serde_json::from_str(&body[start..=end]).unwrap();
    json["balance"].as_i64().unwrap()
}

/// The join that would start a staked series, cut by kill -9 at several
/// moments. Read from the data file while the server is down, the money
/// adds up; after the restart the series either never started (the seat
/// is free, the joiner has every point) or started whole (two stakes
/// held), and once it is settled the winner has the pot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_start_cut_by_kill_9_takes_nothing_from_anyone() {
    let dir = DataDir::new();
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], jumpgate_e2e::free_port()));
    let env = staked_env(&dir, admin);
    let mut started_whole = 0;
    for (round, delay_us) in [0u64, 500, 2_000, 5_000, 20_000].into_iter().enumerate() {
        let [host_id, joiner_id, third_id] =
            ["host", "joiner", "third"].map(|r| format!("r{round}{r}"));
        let mut server = JumpgateProcess::start(&env).await;
        let mut host = Player::connect_to(&server, Encoding::Json, Some(token(&host_id))).await;
        let code = staked_lobby(&mut host, 300).await;
        let mut joiner =
            Player::connect_to(&server, Encoding::MsgPack, Some(token(&joiner_id))).await;
        let c = code.clone();
        joiner
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
        server.kill_9();
        drop((host, joiner));
        conserved_on_disk(dir.path()).await;

        let server = JumpgateProcess::start(&env).await;
        let mut host = Player::connect_to(&server, Encoding::Json, Some(token(&host_id))).await;
        let state = host.join(&code).await;
        let mut third = Player::connect_to(&server, Encoding::Json, Some(token(&third_id))).await;
        let player = if state.phase == Phase::Waiting {
            let c = code.clone();
            third
                .request(|seq| ClientMessage::JoinLobby {
                    seq,
                    code: c,
                    invite: None,
                })
                .await
                .expect("the third player takes the free seat");
            host.phase(Phase::Playing).await;
            third_id.clone()
        } else {
            assert_eq!(state.phase, Phase::Playing);
            started_whole += 1;
            joiner_id.clone()
        };
        host.request(|seq| ClientMessage::Resign { seq })
            .await
            .unwrap();
        host.phase(Phase::Finished).await;
        let winner = format!("a_{player}");
        let paid =
            jumpgate_e2e::probe_while(PATIENCE, || balance(admin, &winner), |b| *b != 1300).await;
        assert_eq!(paid, 1300, "whoever played won the pot");
        server.stop();
        assert_eq!(conserved_on_disk(dir.path()).await, 0, "nothing held");
        assert_eq!(
            balance_on_disk(dir.path(), &format!("a_{host_id}")).await,
            700
        );
        let other = if player == third_id {
            &joiner_id
        } else {
            &third_id
        };
        let untouched = balance_on_disk(dir.path(), &format!("a_{other}")).await;
        assert!(
            untouched == 1000 || untouched == 0,
            "the one who did not play has every point (or never opened a wallet): {untouched}"
        );
    }
    eprintln!("{started_whole} of 5 series starts were stored before the kill");
}

/// Waits for a process that should refuse to run; its log.
async fn refused(mut process: JumpgateProcess, log: &Path) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = process.try_wait() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still running: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "it must exit with an error");
    std::fs::read_to_string(log).unwrap()
}

/// The log at `log` once it says `line` (or [`PATIENCE`] has passed).
async fn logged(log: &Path, line: &str) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(line) || tokio::time::Instant::now() >= deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A second `jumpgate serve` on a directory in use exits at once, saying
/// why and what to do instead; the first goes on serving. Both say at
/// start which store they run on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_data_directory_is_refused() {
    let dir = DataDir::new();
    let logs = tempfile::tempdir().unwrap();
    let mut env = dir.env();
    env.push(("RUST_LOG", "info".to_owned()));
    let first_log = logs.path().join("first.log");
    let first = JumpgateProcess::start_logging(&env, &first_log).await;
    // The port opens before the store does: wait for the line.
    let started = logged(&first_log, "store: the data directory").await;
    assert!(
        started.contains("store: the data directory"),
        "the server says which store it runs on: {started}"
    );
    let second_log = logs.path().join("second.log");
    let second = JumpgateProcess::launch_logging(&env, &second_log);
    let why = refused(second, &second_log).await;
    assert!(
        why.contains("in use by another Jumpgate process") && why.contains("--redis-url"),
        "{why}"
    );
    assert!(
        !why.contains("store: the data directory"),
        "a refused process does not claim to run on the store: {why}"
    );
    let (_host, _guest, code) = lobby_pair(&first, RuleSet::Russian, 1).await;
    assert_eq!(code.len(), 8, "the first still serves");
    #[cfg(unix)]
    for file in [DATA_FILE, "jumpgate.db-wal"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file} is readable by its owner only");
    }

    // Memory, when asked for, says so too.
    let memory_log = logs.path().join("memory.log");
    let _memory = JumpgateProcess::start_logging(
        &[
            ("JUMPGATE_MEMORY", "true".to_owned()),
            ("RUST_LOG", "info".to_owned()),
        ],
        &memory_log,
    )
    .await;
    let said = logged(&memory_log, "store: memory").await;
    assert!(said.contains("store: memory"), "{said}");
}

/// A data file that is not a whole Jumpgate data file (cut short, cut to
/// nothing, its header or a page damaged, garbage, another program's
/// database) is refused with a clear error, and the file is left exactly
/// as it was, for the operator to restore or inspect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_or_foreign_data_file_is_refused_and_left_as_it_was() {
    // A real data file: a server that played some moves, stopped cleanly
    // (its log folded into the file).
    let good = DataDir::new();
    {
        let server = JumpgateProcess::start(&good.env()).await;
        for rule_set in [RuleSet::Russian, RuleSet::Brazilian, RuleSet::Italian] {
            let (mut host, mut guest, _) = lobby_pair(&server, rule_set, 1).await;
            crate::persistence::play(&mut host, &mut guest, 6).await;
        }
        let mut server = server;
        assert!(server.terminate().success());
    }
    let original = std::fs::read(good.path().join(DATA_FILE)).unwrap();
    assert!(original.len() >= 8 * 4096, "a file of several pages");
    let page = 4096;
    let mut damaged: Vec<(&str, Vec<u8>)> = vec![
        ("cut in half", original[..original.len() / 2].to_vec()),
        (
            "cut mid-page",
            original[..original.len() - page - 100].to_vec(),
        ),
        ("cut to nothing", Vec::new()),
        (
            "garbage",
            (0..original.len())
                .map(|i| (i * 7919 % 251) as u8)
                .collect(),
        ),
    ];
    let mut header = original.clone();
    header[..16].copy_from_slice(b"Not a database!\0");
    damaged.push(("header overwritten", header));
    let mut tree = original.clone();
    // Page 2 onwards: overwrite the b-tree page headers of every page.
    for p in 1..original.len() / page {
        tree[p * page..p * page + 12].copy_from_slice(&[0xA5; 12]);
    }
    damaged.push(("page headers damaged", tree));
    let foreign = {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("other.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('hello');")
            .unwrap();
        drop(c);
        std::fs::read(&path).unwrap()
    };
    damaged.push(("another program's database", foreign));

    let logs = tempfile::tempdir().unwrap();
    for (what, bytes) in damaged {
        let dir = DataDir::new();
        let file = dir.path().join(DATA_FILE);
        std::fs::write(&file, &bytes).unwrap();
        let log = logs.path().join(format!("{}.log", what.replace(' ', "-")));
        let process = JumpgateProcess::launch_logging(&dir.env(), &log);
        let why = refused(process, &log).await;
        assert!(
            why.contains("is not a readable Jumpgate data file"),
            "{what}: {why}"
        );
        assert!(
            why.contains("the file was not loaded or changed"),
            "{what}: {why}"
        );
        assert!(
            std::fs::read(&file).unwrap() == bytes,
            "{what}: the file is left exactly as it was"
        );
    }
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    /// `None` where this process may not mount (not root, no
    /// `CAP_SYS_ADMIN`): the test says so and does not run.
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .ok()?;
        status.success().then_some(SmallDisk(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// Takes every byte left with a file of its own; returns it.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.path().join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 4096];
        while file
            .write_all(&block)
            .and_then(|()| file.sync_all())
            .is_ok()
        {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// A full disk refuses the write, never half-applies it: the move is
/// answered `storage_unavailable` and the game does not move on; once there
/// is room again the same move, re-sent with its `seq`, is stored once, and
/// after a kill -9 the file holds every acknowledged move and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_moves_and_loses_none() {
    let Some(disk) = SmallDisk::mount("8m") else {
        eprintln!("skipped: this process cannot mount a tmpfs to fill");
        return;
    };
    let data = disk.path().join("data");
    let env = vec![
        ("JUMPGATE_MEMORY", "false".to_owned()),
        ("JUMPGATE_DATA_DIR", data.display().to_string()),
    ];
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], jumpgate_e2e::free_port()));
    let mut server = JumpgateProcess::start_at(addr, &env).await;
    let (mut host, mut guest, code) = lobby_pair(&server, RuleSet::Russian, 1).await;
    let mut acknowledged = crate::persistence::play(&mut host, &mut guest, 3).await;

    let filler = disk.fill();
    let mover = if host.my_turn() {
        &mut host
    } else {
        &mut guest
    };
    let (seq, notation) = mover.send_first_legal().await;
    assert_eq!(
        mover.expect_error(Some(seq)).await,
        ErrorCode::StorageUnavailable,
        "a move the disk cannot take is refused"
    );

    std::fs::remove_file(filler).unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        mover
            .client
            .send(&ClientMessage::Move {
                seq,
                notation: Some(notation.clone()),
                path: None,
            })
            .await
            .unwrap();
        match mover.answer(seq).await {
            Ok(()) => break,
            Err(ErrorCode::StorageUnavailable) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("the re-sent move: {other}"),
        }
    }
    acknowledged.push(notation);
    for p in [&mut host, &mut guest] {
        p.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 4))
            .await;
    }
    acknowledged.extend(crate::persistence::play(&mut host, &mut guest, 2).await);

    server.kill_9();
    drop((host, guest));
    let db = open_while_down(&data).await;
    let c = code.clone();
    let stored: Vec<String> = db
        .call(move |t| {
            t.conn
                .prepare("SELECT text FROM moves WHERE code = ?1 ORDER BY game_no, ply")?
                .query_map([c], |r| r.get(0))?
                .collect()
        })
        .await
        .unwrap();
    drop(db);
    assert_eq!(
        stored, acknowledged,
        "every acknowledged move, once, in order"
    );
    let server = JumpgateProcess::start_at(addr, &env).await;
    let mut back = Player::connect_to(&server, Encoding::Json, None).await;
    let state = back.watch(&code).await;
    assert_eq!(
        state.game.map(|g| g.ply),
        Some(acknowledged.len() as u32),
        "the restarted server resumes after the last acknowledged move"
    );
}
