// The IPv4 arithmetic lives in lib/ (the API's address pools use it too).
export * from '../../lib/cidr.ts';
