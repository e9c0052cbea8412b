// Code generated from Go's syscall.Errno texts (errtext_test.go checks it); DO NOT EDIT.

// go_errtext is syscall.Errno(e).Error(): Go's texts, which differ from strerror's.
static const char *go_errtext(int e) {
	static char unknown[32];
	switch (e) {
	case 1:
		return "operation not permitted";
	case 2:
		return "no such file or directory";
	case 3:
		return "no such process";
	case 4:
		return "interrupted system call";
	case 5:
		return "input/output error";
	case 6:
		return "no such device or address";
	case 7:
		return "argument list too long";
	case 8:
		return "exec format error";
	case 9:
		return "bad file descriptor";
	case 10:
		return "no child processes";
	case 11:
		return "resource temporarily unavailable";
	case 12:
		return "cannot allocate memory";
	case 13:
		return "permission denied";
	case 14:
		return "bad address";
	case 15:
		return "block device required";
	case 16:
		return "device or resource busy";
	case 17:
		return "file exists";
	case 18:
		return "invalid cross-device link";
	case 19:
		return "no such device";
	case 20:
		return "not a directory";
	case 21:
		return "is a directory";
	case 22:
		return "invalid argument";
	case 23:
		return "too many open files in system";
	case 24:
		return "too many open files";
	case 25:
		return "inappropriate ioctl for device";
	case 26:
		return "text file busy";
	case 27:
		return "file too large";
	case 28:
		return "no space left on device";
	case 29:
		return "illegal seek";
	case 30:
		return "read-only file system";
	case 31:
		return "too many links";
	case 32:
		return "broken pipe";
	case 33:
		return "numerical argument out of domain";
	case 34:
		return "numerical result out of range";
	case 35:
		return "resource deadlock avoided";
	case 36:
		return "file name too long";
	case 37:
		return "no locks available";
	case 38:
		return "function not implemented";
	case 39:
		return "directory not empty";
	case 40:
		return "too many levels of symbolic links";
	case 42:
		return "no message of desired type";
	case 43:
		return "identifier removed";
	case 44:
		return "channel number out of range";
	case 45:
		return "level 2 not synchronized";
	case 46:
		return "level 3 halted";
	case 47:
		return "level 3 reset";
	case 48:
		return "link number out of range";
	case 49:
		return "protocol driver not attached";
	case 50:
		return "no CSI structure available";
	case 51:
		return "level 2 halted";
	case 52:
		return "invalid exchange";
	case 53:
		return "invalid request descriptor";
	case 54:
		return "exchange full";
	case 55:
		return "no anode";
	case 56:
		return "invalid request code";
	case 57:
		return "invalid slot";
	case 59:
		return "bad font file format";
	case 60:
		return "device not a stream";
	case 61:
		return "no data available";
	case 62:
		return "timer expired";
	case 63:
		return "out of streams resources";
	case 64:
		return "machine is not on the network";
	case 65:
		return "package not installed";
	case 66:
		return "object is remote";
	case 67:
		return "link has been severed";
	case 68:
		return "advertise error";
	case 69:
		return "srmount error";
	case 70:
		return "communication error on send";
	case 71:
		return "protocol error";
	case 72:
		return "multihop attempted";
	case 73:
		return "RFS specific error";
	case 74:
		return "bad message";
	case 75:
		return "value too large for defined data type";
	case 76:
		return "name not unique on network";
	case 77:
		return "file descriptor in bad state";
	case 78:
		return "remote address changed";
	case 79:
		return "can not access a needed shared library";
	case 80:
		return "accessing a corrupted shared library";
	case 81:
		return ".lib section in a.out corrupted";
	case 82:
		return "attempting to link in too many shared libraries";
	case 83:
		return "cannot exec a shared library directly";
	case 84:
		return "invalid or incomplete multibyte or wide character";
	case 85:
		return "interrupted system call should be restarted";
	case 86:
		return "streams pipe error";
	case 87:
		return "too many users";
	case 88:
		return "socket operation on non-socket";
	case 89:
		return "destination address required";
	case 90:
		return "message too long";
	case 91:
		return "protocol wrong type for socket";
	case 92:
		return "protocol not available";
	case 93:
		return "protocol not supported";
	case 94:
		return "socket type not supported";
	case 95:
		return "operation not supported";
	case 96:
		return "protocol family not supported";
	case 97:
		return "address family not supported by protocol";
	case 98:
		return "address already in use";
	case 99:
		return "cannot assign requested address";
	case 100:
		return "network is down";
	case 101:
		return "network is unreachable";
	case 102:
		return "network dropped connection on reset";
	case 103:
		return "software caused connection abort";
	case 104:
		return "connection reset by peer";
	case 105:
		return "no buffer space available";
	case 106:
		return "transport endpoint is already connected";
	case 107:
		return "transport endpoint is not connected";
	case 108:
		return "cannot send after transport endpoint shutdown";
	case 109:
		return "too many references: cannot splice";
	case 110:
		return "connection timed out";
	case 111:
		return "connection refused";
	case 112:
		return "host is down";
	case 113:
		return "no route to host";
	case 114:
		return "operation already in progress";
	case 115:
		return "operation now in progress";
	case 116:
		return "stale file handle";
	case 117:
		return "structure needs cleaning";
	case 118:
		return "not a XENIX named type file";
	case 119:
		return "no XENIX semaphores available";
	case 120:
		return "is a named type file";
	case 121:
		return "remote I/O error";
	case 122:
		return "disk quota exceeded";
	case 123:
		return "no medium found";
	case 124:
		return "wrong medium type";
	case 125:
		return "operation canceled";
	case 126:
		return "required key not available";
	case 127:
		return "key has expired";
	case 128:
		return "key has been revoked";
	case 129:
		return "key was rejected by service";
	case 130:
		return "owner died";
	case 131:
		return "state not recoverable";
	case 132:
		return "operation not possible due to RF-kill";
	}
	snprintf(unknown, sizeof unknown, "errno %d", e);
	return unknown;
}
