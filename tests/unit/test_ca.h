/*
 * The unit tests' certificate authority, made in memory with OpenSSL: P-256
 * keys, an authority and the server certificates it signs, a TLS server
 * context presenting one, and a PEM file of the authority for
 * FLASHSALE_HTTPC_CA_FILE. Every failure exits 2 (the test cannot run).
 */
#ifndef FS_TEST_CA_H
#define FS_TEST_CA_H

#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* Adds the extension nid = value to x (issued by issuer); exits on failure. */
static void
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&v);
	X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
	if ((e = X509V3_EXT_conf_nid(NULL, &v, nid, value)) == NULL || X509_add_ext(x, e, -1) != 1)
		exit(2);
	X509_EXTENSION_free(e);
}

/*
 * A certificate for key named cn, signed by issuer's ikey (itself when
 * issuer is NULL: an authority); san NULL makes an authority, else a
 * server certificate with these subjectAltNames.
 */
static X509 *
make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, const char *san)
{
	static long serial = 1;
	X509 *x = X509_new();

	if (x == NULL || X509_set_version(x, 2) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -60) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 3600) == NULL || X509_set_pubkey(x, key) != 1 ||
	    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
		(const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(issuer != NULL ? issuer : x)) != 1)
		exit(2);
	add_ext(x, issuer != NULL ? issuer : x, NID_basic_constraints,
	    san == NULL ? "critical,CA:TRUE" : "critical,CA:FALSE");
	add_ext(x, issuer != NULL ? issuer : x, NID_key_usage,
	    san == NULL ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
	add_ext(x, issuer != NULL ? issuer : x, NID_subject_key_identifier, "hash");
	if (san != NULL) {
		add_ext(x, issuer, NID_authority_key_identifier, "keyid");
		add_ext(x, issuer, NID_subject_alt_name, san);
		add_ext(x, issuer, NID_ext_key_usage, "serverAuth");
	}
	if (X509_sign(x, issuer != NULL ? ikey : key, EVP_sha256()) == 0)
		exit(2);
	return x;
}

/* A server context presenting cert and key. */
static SSL_CTX *
server_ctx(X509 *cert, EVP_PKEY *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL || SSL_CTX_use_certificate(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, key) != 1)
		exit(2);
	return ctx;
}

/* Writes x as PEM into the file path. */
static void
write_pem(X509 *x, const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || PEM_write_X509(f, x) != 1 || fclose(f) != 0)
		exit(2);
}

#endif
