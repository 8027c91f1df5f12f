//! Creating a file beneath a folder through folder handles (Unix), so that
//! no path is resolved twice: `memidx remember` checks its `--dir`, and a
//! concurrent swap of a folder on that path for a symbolic link to
//! elsewhere must not move the note out of the indexed folder.
//!
//! Each folder along the way is opened relative to its parent's handle with
//! `O_DIRECTORY | O_NOFOLLOW` (`openat`), created with `mkdirat` when
//! missing; the note is written to a new hidden file in the last handle
//! (`O_CREAT | O_EXCL | O_NOFOLLOW`) and hard-linked into place under a
//! free name (`linkat`, which never replaces a file); the hidden file is
//! removed on every path, success or failure. Plain `libc`: the standard
//! library has no `openat`.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An open folder, the base of the names given to its methods.
pub struct Folder {
    fd: OwnedFd,
}

/// Why a folder along the way could not be opened.
#[derive(Debug)]
pub enum Step {
    /// The name is a symbolic link (not followed).
    Link,
    /// The name is something else than a folder.
    NotAFolder,
    /// Any other failure.
    Io(io::Error),
}

/// `name` as a C string; a NUL inside cannot name a file.
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The result of a libc call that returns -1 on error.
fn checked(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Folder {
    /// Opens the folder at `path` (links in `path` itself are followed: it
    /// is the already resolved root).
    pub fn open(path: &Path) -> io::Result<Self> {
        let name = c_name(path.as_os_str())?;
        // SAFETY: a valid C string; the returned descriptor is owned below.
        let fd = checked(unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` is a descriptor just opened and owned by nobody else.
        Ok(Self {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// The folder `name` inside this one, created when missing, never
    /// through a symbolic link.
    pub fn child(&self, name: &OsStr) -> Result<Self, Step> {
        let c = c_name(name).map_err(Step::Io)?;
        let open = || {
            // SAFETY: a valid descriptor and C string.
            checked(unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            })
        };
        let fd = match open() {
            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {
                // SAFETY: a valid descriptor and C string.
                let made =
                    checked(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) });
                match made {
                    Ok(_) => open(),
                    Err(err) if err.raw_os_error() == Some(libc::EEXIST) => open(),
                    Err(err) => Err(err),
                }
            }
            other => other,
        };
        match fd {
            // SAFETY: a descriptor just opened and owned by nobody else.
            Ok(fd) => Ok(Self {
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
            }),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => Err(Step::Link),
            Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => {
                // O_NOFOLLOW with O_DIRECTORY reports a link as ENOTDIR on
                // some systems: tell the two apart.
                match self.is_link(&c) {
                    true => Err(Step::Link),
                    false => Err(Step::NotAFolder),
                }
            }
            Err(err) => Err(Step::Io(err)),
        }
    }

    /// Whether `name` here is a symbolic link.
    fn is_link(&self, name: &CString) -> bool {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid descriptor, C string and stat buffer.
        let ret = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        // SAFETY: fstatat filled the buffer when it returned 0.
        ret == 0 && unsafe { stat.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFLNK
    }

    /// A new file `name` here, created `0666` less the umask, never
    /// replacing anything and never through a link.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let c = c_name(name)?;
        // SAFETY: a valid descriptor and C string.
        let fd = checked(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: a descriptor just opened and owned by nobody else.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Links the file `from` here under the name `to` here: `Ok(false)`
    /// when `to` is taken (nothing is replaced).
    pub fn link_new(&self, from: &OsStr, to: &OsStr) -> io::Result<bool> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let dir = self.fd.as_raw_fd();
        // SAFETY: valid descriptors and C strings.
        match checked(unsafe { libc::linkat(dir, from.as_ptr(), dir, to.as_ptr(), 0) }) {
            Ok(_) => Ok(true),
            Err(err) if err.raw_os_error() == Some(libc::EEXIST) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Removes the file `name` here.
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a valid descriptor and C string.
        checked(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(|_| ())
    }
}
