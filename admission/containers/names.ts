// Container names: validation and the default "<adjective>_<surname>" generator.
import { randomInt } from 'node:crypto';
import { invalidArgument } from '../../lib/errors.ts';

const VALID = /^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

/** "/web" from "web" or "/web"; InvalidArgument with the reference daemon's message when invalid. */
export function normalizeName(name: string): string {
  if (!VALID.test(name)) throw invalidArgument(`Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`);
  return name.startsWith('/') ? name : `/${name}`;
}

const ADJECTIVES = [
  'agile', 'amber', 'bold', 'brave', 'bright', 'calm', 'clever', 'cosmic', 'crisp', 'curious',
  'daring', 'eager', 'earnest', 'fervent', 'gentle', 'glad', 'happy', 'humble', 'jolly', 'keen',
  'kind', 'lively', 'loyal', 'lucid', 'mellow', 'merry', 'modest', 'nimble', 'noble', 'patient',
  'plucky', 'proud', 'quick', 'quiet', 'rapid', 'serene', 'sharp', 'steady', 'sunny', 'swift',
  'tender', 'tidy', 'trusty', 'upbeat', 'vivid', 'warm', 'witty', 'zealous',
];
const SURNAMES = [
  'agnesi', 'babbage', 'bardeen', 'bohr', 'boole', 'cannon', 'curie', 'darwin', 'dijkstra', 'einstein',
  'euler', 'faraday', 'fermat', 'fermi', 'franklin', 'galileo', 'gauss', 'goodall', 'hamilton', 'hawking',
  'hopper', 'hypatia', 'johnson', 'kepler', 'knuth', 'lamarr', 'lovelace', 'maxwell', 'meitner', 'mendel',
  'newton', 'noether', 'pascal', 'pasteur', 'planck', 'ramanujan', 'ritchie', 'sagan', 'shannon', 'thompson',
  'turing', 'volta', 'wilson', 'wozniak', 'wright', 'yalow',
];

/** A free default name; after 6 collisions the short id, like the reference daemon. */
export function generateName(taken: (name: string) => boolean, shortId: string): string {
  for (let i = 0; i < 6; i++) {
    let n = `${ADJECTIVES[randomInt(ADJECTIVES.length)]}_${SURNAMES[randomInt(SURNAMES.length)]}`;
    if (i > 0) n += String(randomInt(10));
    if (!taken(`/${n}`)) return `/${n}`;
  }
  return `/${shortId}`;
}
