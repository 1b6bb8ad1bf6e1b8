// Go's net.JoinHostPort: a host and a port as one address, an IPv6 host in brackets.

/** The host as it goes before a ":port" (an IPv6 address bracketed). */
export const bracketHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/** "host:port", "[v6]:port". */
export const joinHostPort = (host: string, port: string | number): string => `${bracketHost(host)}:${port}`;
