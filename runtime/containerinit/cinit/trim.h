// strings.TrimSpace for the C init (cinit.c; trim_test.go checks it).

// space_at is the length of the white space (unicode.IsSpace, UTF-8) at
// s, 0 when there is none: strings.TrimSpace's set.
static int space_at(const unsigned char *s, const unsigned char *end) {
	long n = end - s;
	if (n >= 1 && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
		return 1;
	if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
		return 2;
	if (n < 3)
		return 0;
	if ((s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) || (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) ||
	    (s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) ||
	    (s[0] == 0xE2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF)))
		return 3;
	return 0;
}

// trim_space is strings.TrimSpace of [*s, *e).
static void trim_space(char **s, char **e) {
	int n;
	while (*s < *e && (n = space_at((unsigned char *)*s, (unsigned char *)*e)) > 0)
		*s += n;
	for (int done = 0; !done && *e > *s;) {
		done = 1;
		for (n = 1; n <= 3 && *e - n >= *s; n++) {
			if (space_at((unsigned char *)*e - n, (unsigned char *)*e) == n) {
				*e -= n;
				done = 0;
				break;
			}
		}
	}
}
