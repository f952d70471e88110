// Mints one JWT with jose, an implementation independent of lib/token, for
// tests/integration/t_70_jwks.sh. It only mints: the keys come from files.
//   node mint-token.mjs KEYFILE ALG KID SUB [CLAIMS_JSON]
// KEYFILE holds raw bytes as flashsale-admin keys generate writes them: 64
// (a libsodium Ed25519 secret key: seed, then public key) for EdDSA, 32 to
// 64 (a secret) for HS256. KID "" leaves the header without one. The claims
// are sub, iat = now and exp = now + 600, then CLAIMS_JSON's members over them.
import { readFileSync } from 'node:fs';
import { importJWK, SignJWT } from 'jose';

const [keyfile, alg, kid, sub, extra] = process.argv.slice(2);
if (!keyfile || !alg || kid === undefined || !sub) {
  console.error('usage: node mint-token.mjs KEYFILE ALG KID SUB [CLAIMS_JSON]');
  process.exit(2);
}
const raw = readFileSync(keyfile);
const b64 = (buf) => Buffer.from(buf).toString('base64url');
let jwk;
if (alg === 'EdDSA' && raw.length === 64)
  jwk = { kty: 'OKP', crv: 'Ed25519', d: b64(raw.subarray(0, 32)), x: b64(raw.subarray(32)) };
else if (alg === 'HS256' && raw.length >= 32 && raw.length <= 64)
  jwk = { kty: 'oct', k: b64(raw) };
else {
  console.error(`mint-token: ${keyfile}: ${raw.length} bytes are no ${alg} key`);
  process.exit(2);
}
const key = await importJWK(jwk, alg);
const now = Math.floor(Date.now() / 1000);
const claims = { sub, iat: now, exp: now + 600, ...(extra ? JSON.parse(extra) : {}) };
const header = { alg, typ: 'JWT' };
if (kid !== '')
  header.kid = kid;
process.stdout.write(await new SignJWT(claims).setProtectedHeader(header).sign(key) + '\n');
