//! A fanotify group that watches folders the way inotify does, for a user
//! without privileges (Linux 5.13 and later): events name the folder by its
//! file handle and the child by its name (`FAN_REPORT_DFID_NAME`), and marks
//! come from their own per-user quota (`fs.fanotify.max_user_marks`), apart
//! from the inotify watches editors and test runners use.
//!
//! A folder is opened once (never through a link) and marked, and its handle
//! taken, through that one descriptor, so the handle is the marked folder's
//! even when another folder takes its path meanwhile. A handle is only a key:
//! the caller keeps the path each one was taken at. This module interprets
//! nothing; [`super`] turns events into folders to check.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// A folder's identity in events: its file system's id, the handle's type and
/// the handle's bytes, as the kernel reports them.
pub(super) type Handle = Box<[u8]>;

/// What a folder's mark reports: its children coming, going, moving, written
/// or touched (folders among them), and the folder itself deleted or moved.
const MASK: u64 = libc::FAN_CREATE
    | libc::FAN_DELETE
    | libc::FAN_MOVED_FROM
    | libc::FAN_MOVED_TO
    | libc::FAN_MODIFY
    | libc::FAN_ATTRIB
    | libc::FAN_CLOSE_WRITE
    | libc::FAN_DELETE_SELF
    | libc::FAN_MOVE_SELF
    | libc::FAN_EVENT_ON_CHILD
    | libc::FAN_ONDIR;

/// The largest file handle (`MAX_HANDLE_SZ`).
const MAX_HANDLE_BYTES: usize = 128;

/// Bytes of an event's fixed part (`struct fanotify_event_metadata`).
const METADATA_BYTES: usize = 24;

/// One event as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Event {
    /// The group's queue overflowed: events were lost.
    Overflow,
    /// Something happened in (or to) the marked folder `folder`.
    Folder {
        /// The marked folder's handle.
        folder: Handle,
        /// The child's name; `.` when the event is the folder's own.
        name: Option<OsString>,
        /// What happened (`FAN_*` bits, merged when the kernel merged events).
        mask: u64,
    },
}

/// A fanotify group reporting folder handles and names, read without blocking.
pub(super) struct Group {
    fd: OwnedFd,
    /// File system ids by mount id, read once per mount.
    fsids: HashMap<libc::c_int, [u8; 8]>,
}

/// `struct file_handle` with room for the largest handle.
#[repr(C)]
struct FileHandle {
    handle_bytes: libc::c_uint,
    handle_type: libc::c_int,
    f_handle: [u8; MAX_HANDLE_BYTES],
}

impl Group {
    /// A new group; fails where the kernel refuses this user one (before
    /// Linux 5.13, or a system that forbids it).
    pub(super) fn open() -> Result<Group, Errno> {
        let flags = libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | libc::FAN_REPORT_DFID_NAME;
        // SAFETY: a plain system call with no pointer arguments.
        let fd = unsafe { libc::fanotify_init(flags, (libc::O_RDONLY | libc::O_CLOEXEC) as libc::c_uint) };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Group {
            fd,
            fsids: HashMap::new(),
        })
    }

    /// Marks the folder at `path` (never through a link) and returns its
    /// handle. `NOENT`, `NOTDIR` or `LOOP` when no folder is there.
    pub(super) fn mark(&mut self, path: &Path) -> Result<Handle, Errno> {
        let dir = open_folder(path)?;
        let handle = self.handle(dir.as_fd())?;
        self.change_mark(libc::FAN_MARK_ADD | libc::FAN_MARK_ONLYDIR, dir.as_fd())?;
        Ok(handle)
    }

    /// The handle of the folder at `path` without opening it (a folder this
    /// user may not read cannot be marked, but events about it delivered to
    /// the folder holding it carry its own handle).
    pub(super) fn handle_at(&mut self, path: &Path) -> Result<Handle, Errno> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
        self.handle_of(libc::AT_FDCWD, &path, 0, || {
            let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
            // SAFETY: `path` is a C string and `stat` has room for the structure.
            if unsafe { libc::statfs(path.as_ptr(), stat.as_mut_ptr()) } < 0 {
                return Err(last_errno());
            }
            // SAFETY: filled by the successful call above.
            Ok(fsid_of(unsafe { stat.assume_init() }))
        })
    }

    /// Removes the mark of the folder at `path` when that folder is still the
    /// one `handle` names (a folder made or moved to the path meanwhile keeps
    /// its own mark). A mark left behind ends with its folder.
    pub(super) fn unmark(&mut self, path: &Path, handle: &[u8]) {
        let Ok(dir) = open_folder(path) else {
            return;
        };
        if self.handle(dir.as_fd()).is_ok_and(|now| *now == *handle) {
            let _ = self.change_mark(libc::FAN_MARK_REMOVE, dir.as_fd());
        }
    }

    /// Every queued event, read without blocking; an error when the queue
    /// cannot be read or holds what this module cannot parse.
    pub(super) fn drain(&self) -> Result<Vec<Event>, Errno> {
        let mut events = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = match rustix::io::read(&self.fd, &mut buf) {
                Ok(read) => read,
                Err(Errno::AGAIN) => return Ok(events),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e),
            };
            if read == 0 {
                return Ok(events);
            }
            parse(&buf[..read], &mut events)?;
        }
    }

    fn change_mark(&self, flags: libc::c_uint, dir: BorrowedFd<'_>) -> Result<(), Errno> {
        // SAFETY: both descriptors are open for the call; a null path marks
        // the object `dir` refers to.
        let done = unsafe { libc::fanotify_mark(self.fd.as_raw_fd(), flags, MASK, dir.as_raw_fd(), std::ptr::null()) };
        if done < 0 {
            return Err(last_errno());
        }
        Ok(())
    }

    /// The handle of the folder open as `dir`, in the form events carry.
    fn handle(&mut self, dir: BorrowedFd<'_>) -> Result<Handle, Errno> {
        self.handle_of(dir.as_raw_fd(), c"", libc::AT_EMPTY_PATH, || fsid(dir))
    }

    /// The handle of `path` from `dir` (`name_to_handle_at` with `flags`, never
    /// following a link), with the id of its file system from `fsid` once per mount.
    fn handle_of(
        &mut self,
        dir: libc::c_int,
        path: &std::ffi::CStr,
        flags: libc::c_int,
        fsid: impl FnOnce() -> Result<[u8; 8], Errno>,
    ) -> Result<Handle, Errno> {
        let mut raw = FileHandle {
            handle_bytes: MAX_HANDLE_BYTES as libc::c_uint,
            handle_type: 0,
            f_handle: [0; MAX_HANDLE_BYTES],
        };
        let mut mount_id: libc::c_int = 0;
        // A handle for identity only, as fanotify reports it, on file systems
        // that cannot export one too (overlayfs); kernels before 6.5 refuse
        // the flag and give the same handle without it where they can.
        let mut flags = flags | libc::AT_HANDLE_FID;
        loop {
            // SAFETY: `raw` has room for `handle_bytes` bytes of handle, the
            // empty path is a valid C string, and `dir` is open for the call.
            let done = unsafe {
                libc::syscall(
                    libc::SYS_name_to_handle_at,
                    dir,
                    path.as_ptr(),
                    &mut raw as *mut FileHandle,
                    &mut mount_id as *mut libc::c_int,
                    flags,
                )
            };
            if done == 0 {
                break;
            }
            match last_errno() {
                Errno::INVAL if flags & libc::AT_HANDLE_FID != 0 => flags &= !libc::AT_HANDLE_FID,
                e => return Err(e),
            }
        }
        let fsid = match self.fsids.get(&mount_id) {
            Some(fsid) => *fsid,
            None => {
                let fsid = fsid()?;
                self.fsids.insert(mount_id, fsid);
                fsid
            }
        };
        let bytes = (raw.handle_bytes as usize).min(MAX_HANDLE_BYTES);
        Ok(key(&fsid, raw.handle_type, &raw.f_handle[..bytes]))
    }
}

/// Opens the folder at `path` for marking, never through a link.
fn open_folder(path: &Path) -> Result<OwnedFd, Errno> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The id of the file system `dir` is on, as events report it.
fn fsid(dir: BorrowedFd<'_>) -> Result<[u8; 8], Errno> {
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `stat` has room for the structure the call fills.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), stat.as_mut_ptr()) } < 0 {
        return Err(last_errno());
    }
    // SAFETY: filled by the successful call above.
    Ok(fsid_of(unsafe { stat.assume_init() }))
}

/// The file system id `stat` holds, as events report it.
fn fsid_of(stat: libc::statfs) -> [u8; 8] {
    // SAFETY: `fsid_t` is two C ints (its field is private in libc), the
    // same eight bytes events carry.
    unsafe { std::mem::transmute(stat.f_fsid) }
}

/// The key of a handle: file system id, handle type, handle bytes.
fn key(fsid: &[u8], handle_type: libc::c_int, handle: &[u8]) -> Handle {
    let mut key = Vec::with_capacity(fsid.len() + 4 + handle.len());
    key.extend_from_slice(fsid);
    key.extend_from_slice(&handle_type.to_ne_bytes());
    key.extend_from_slice(handle);
    key.into_boxed_slice()
}

fn last_errno() -> Errno {
    Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO)
}

/// Appends the events in `bytes` (whole events, as one read returns them).
fn parse(bytes: &[u8], events: &mut Vec<Event>) -> Result<(), Errno> {
    let u16_at = |b: &[u8], at: usize| b.get(at..at + 2).map(|s| u16::from_ne_bytes([s[0], s[1]]));
    let u32_at = |b: &[u8], at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_ne_bytes(s.try_into().expect("four bytes")))
    };
    let mut at = 0;
    while at < bytes.len() {
        let event = &bytes[at..];
        let (Some(len), Some(meta_len)) = (u32_at(event, 0), u16_at(event, 6)) else {
            return Err(Errno::PROTO);
        };
        let (len, meta_len) = (len as usize, meta_len as usize);
        if event[4] != libc::FANOTIFY_METADATA_VERSION
            || meta_len < METADATA_BYTES
            || meta_len > len
            || len > event.len()
        {
            return Err(Errno::PROTO);
        }
        let mask = u64::from_ne_bytes(event[8..16].try_into().expect("eight bytes"));
        // A group reporting handles gets no descriptor with its events.
        if u32_at(event, 16).expect("within the fixed part") as i32 != libc::FAN_NOFD {
            return Err(Errno::PROTO);
        }
        at += len;
        if mask & libc::FAN_Q_OVERFLOW != 0 {
            events.push(Event::Overflow);
            continue;
        }
        let mut info = &event[meta_len..len];
        while !info.is_empty() {
            let (Some(kind), Some(info_len)) = (info.first().copied(), u16_at(info, 2)) else {
                return Err(Errno::PROTO);
            };
            let info_len = info_len as usize;
            if info_len < 4 || info_len > info.len() {
                return Err(Errno::PROTO);
            }
            let record = &info[..info_len];
            info = &info[info_len..];
            if kind != libc::FAN_EVENT_INFO_TYPE_DFID_NAME && kind != libc::FAN_EVENT_INFO_TYPE_DFID {
                continue;
            }
            let (Some(handle_bytes), Some(handle_type)) = (u32_at(record, 12), u32_at(record, 16)) else {
                return Err(Errno::PROTO);
            };
            let handle_end = 20usize.checked_add(handle_bytes as usize).ok_or(Errno::PROTO)?;
            let Some(handle) = record.get(20..handle_end) else {
                return Err(Errno::PROTO);
            };
            let handle_type = handle_type as libc::c_int;
            let name = (kind == libc::FAN_EVENT_INFO_TYPE_DFID_NAME).then(|| {
                let rest = &record[handle_end..];
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                OsString::from_vec(rest[..end].to_vec())
            });
            events.push(Event::Folder {
                folder: key(&record[4..12], handle_type, handle),
                name,
                mask,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_events(group: &Group) -> Vec<(Handle, String, u64)> {
        group
            .drain()
            .unwrap()
            .into_iter()
            .map(|event| match event {
                Event::Folder { folder, name, mask } => {
                    (folder, name.unwrap_or_default().to_string_lossy().into_owned(), mask)
                }
                Event::Overflow => panic!("unexpected overflow"),
            })
            .collect()
    }

    /// Whether `events` hold one in the folder `handle` about `name` with the bit `mask`.
    fn has(events: &[(Handle, String, u64)], handle: &Handle, name: &str, mask: u64) -> bool {
        events.iter().any(|(h, n, m)| h == handle && n == name && m & mask != 0)
    }

    /// Events name the marked folder by the handle `mark` returned, and the
    /// child by its name; the folder's own events say `.`; nothing is
    /// queued while nothing happens, and an unmarked folder reports nothing.
    #[test]
    fn events_name_the_marked_folder_and_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let mut group = Group::open().unwrap();
        let handle_a = group.mark(&a).unwrap();
        let handle_b = group.mark(&b).unwrap();
        assert_ne!(handle_a, handle_b);
        assert_eq!(group.drain().unwrap(), []);
        std::fs::write(a.join("SKILL.md"), "x").unwrap();
        std::fs::create_dir(b.join("sub")).unwrap();
        let events = folder_events(&group);
        assert!(has(&events, &handle_a, "SKILL.md", libc::FAN_CLOSE_WRITE), "{events:?}");
        assert!(has(&events, &handle_b, "sub", libc::FAN_ONDIR), "{events:?}");
        assert!(events.iter().all(|(h, ..)| *h == handle_a || *h == handle_b));
        // Unmarked: nothing more from `b`.
        group.unmark(&b, &handle_b);
        std::fs::write(b.join("other"), "x").unwrap();
        assert_eq!(folder_events(&group), []);
        // The folder itself moved.
        std::fs::rename(&a, dir.path().join("a2")).unwrap();
        let events = folder_events(&group);
        assert!(has(&events, &handle_a, ".", libc::FAN_MOVE_SELF), "{events:?}");
    }

    /// A folder made at a marked folder's path is another folder: its handle
    /// differs, and unmarking by the old handle leaves its mark alone.
    #[test]
    fn a_folder_made_again_at_the_path_has_another_handle() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let mut group = Group::open().unwrap();
        let old = group.mark(&a).unwrap();
        std::fs::rename(&a, dir.path().join("gone")).unwrap();
        std::fs::create_dir(&a).unwrap();
        let new = group.mark(&a).unwrap();
        assert_ne!(old, new);
        group.drain().unwrap();
        group.unmark(&a, &old);
        std::fs::write(a.join("f"), "x").unwrap();
        assert!(folder_events(&group).iter().any(|(h, n, _)| *h == new && n == "f"));
    }

    /// Nothing but a folder is marked, and never through a link.
    #[test]
    fn only_a_folder_itself_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("link")).unwrap();
        let mut group = Group::open().unwrap();
        assert_eq!(group.mark(&dir.path().join("file")), Err(Errno::NOTDIR));
        let through_link = group.mark(&dir.path().join("link"));
        assert!(
            matches!(through_link, Err(Errno::NOTDIR | Errno::LOOP)),
            "{through_link:?}"
        );
        assert_eq!(group.mark(&dir.path().join("missing")), Err(Errno::NOENT));
    }

    /// An event's fixed part, `info` after it.
    fn event(mask: u64, fd: i32, info: &[u8]) -> Vec<u8> {
        let mut event = vec![0u8; METADATA_BYTES];
        event[0..4].copy_from_slice(&((METADATA_BYTES + info.len()) as u32).to_ne_bytes());
        event[4] = libc::FANOTIFY_METADATA_VERSION;
        event[6..8].copy_from_slice(&(METADATA_BYTES as u16).to_ne_bytes());
        event[8..16].copy_from_slice(&mask.to_ne_bytes());
        event[16..20].copy_from_slice(&fd.to_ne_bytes());
        event.extend_from_slice(info);
        event
    }

    /// A folder handle record of `handle` and `name`.
    fn record(handle: &[u8], name: &[u8]) -> Vec<u8> {
        let mut record = vec![libc::FAN_EVENT_INFO_TYPE_DFID_NAME, 0, 0, 0];
        record.extend_from_slice(&[7; 8]);
        record.extend_from_slice(&(handle.len() as u32).to_ne_bytes());
        record.extend_from_slice(&1i32.to_ne_bytes());
        record.extend_from_slice(handle);
        record.extend_from_slice(name);
        record.push(0);
        let len = record.len() as u16;
        record[2..4].copy_from_slice(&len.to_ne_bytes());
        record
    }

    /// Bytes that are no whole event are refused, not read past; a record
    /// of another kind is skipped; a descriptor (never sent in this mode)
    /// is refused, not closed.
    #[test]
    fn what_is_no_whole_event_is_refused() {
        let mut events = Vec::new();
        assert_eq!(parse(&[0u8; 10], &mut events), Err(Errno::PROTO));
        let mut truncated = event(0, libc::FAN_NOFD, &[]);
        truncated[0..4].copy_from_slice(&(METADATA_BYTES as u32 + 8).to_ne_bytes());
        assert_eq!(parse(&truncated, &mut events), Err(Errno::PROTO));
        let mut short_fixed_part = event(0, libc::FAN_NOFD, &[]);
        short_fixed_part[6..8].copy_from_slice(&4u16.to_ne_bytes());
        assert_eq!(parse(&short_fixed_part, &mut events), Err(Errno::PROTO));
        assert_eq!(
            parse(&event(libc::FAN_CREATE, 0, &record(b"h", b"x")), &mut events),
            Err(Errno::PROTO)
        );
        let mut long_handle = record(b"h", b"x");
        long_handle[12..16].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(
            parse(&event(libc::FAN_CREATE, libc::FAN_NOFD, &long_handle), &mut events),
            Err(Errno::PROTO)
        );
        assert_eq!(events, []);

        let pidfd = [libc::FAN_EVENT_INFO_TYPE_PIDFD, 0, 8, 0, 0, 0, 0, 0];
        let mut info = pidfd.to_vec();
        info.extend(record(b"h", b"x"));
        let mut bytes = event(libc::FAN_Q_OVERFLOW, libc::FAN_NOFD, &[]);
        bytes.extend(event(libc::FAN_CREATE, libc::FAN_NOFD, &info));
        assert_eq!(parse(&bytes, &mut events), Ok(()));
        let mut key = vec![7; 8];
        key.extend_from_slice(&1i32.to_ne_bytes());
        key.push(b'h');
        assert_eq!(
            events,
            [
                Event::Overflow,
                Event::Folder {
                    folder: key.into_boxed_slice(),
                    name: Some("x".into()),
                    mask: libc::FAN_CREATE
                }
            ]
        );
    }
}
