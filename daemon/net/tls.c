/*
 * tls: the TLS listener's context.  See tls.h.
 */
#include "tls.h"

#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "config.h"
#include "log.h"

/*
 * The id of the sessions this context makes.  With client certificates,
 * OpenSSL fails every resumption ("session id context uninitialized")
 * unless the context has one, lest a session verified elsewhere resume
 * here; with one context per process (and its own ticket keys), a
 * constant tells enough.
 */
#define TLS_SESSION_ID_CONTEXT "nddd"

/* The most of a subject or a peer a log line shows. */
#define TLS_SUBJECT_MAX 512
#define TLS_PEER_MAX (NI_MAXHOST + NI_MAXSERV + 2)

static char *
tls_error(const char *what, const char *path)
{
	char buf[256], *cause;

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	if (asprintf(&cause, "TLS: %s %s: %s", what, path ? path : "",
	    buf) == -1)
		return NULL;
	return cause;
}

/* The subject of cert as RFC 2253 writes it (control characters and
 * bytes above 0x7f escaped: it goes to the log), cut to size. */
static void
tls_subject(X509 *cert, char *buf, size_t size)
{
	BIO *bio = BIO_new(BIO_s_mem());
	int n = 0;

	if (bio != NULL && X509_NAME_print_ex(bio, X509_get_subject_name(cert),
	    0, XN_FLAG_RFC2253) >= 0)
		n = BIO_read(bio, buf, (int)size - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(bio);
}

/* The client's address, as server.c names connections. */
static void
tls_peer(SSL *ssl, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[NI_MAXHOST], port[NI_MAXSERV];
	int fd = SSL_get_fd(ssl);

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port,
	    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%s:%s", host, port);
}

/*
 * Whether the subject of cert has exactly one common name and it is one
 * of the names of list.  Several CNs are refused: which would name the
 * client?  So is a CN with a NUL inside, which could pass for a shorter
 * name.
 */
static bool
tls_cn_listed(X509 *cert, const char *list)
{
	X509_NAME *subject = X509_get_subject_name(cert);
	int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
	unsigned char *cn;
	const char *name;
	size_t len;
	int n;
	bool listed = false;

	if (i < 0 || X509_NAME_get_index_by_NID(subject, NID_commonName,
	    i) >= 0)
		return false;
	n = ASN1_STRING_to_UTF8(&cn, X509_NAME_ENTRY_get_data(
	    X509_NAME_get_entry(subject, i)));
	if (n < 0)
		return false;
	if (memchr(cn, '\0', (size_t)n) == NULL)
		while ((name = config_list_next(&list, &len)) != NULL)
			if (len == (size_t)n && memcmp(name, cn, len) == 0)
				listed = true;
	OPENSSL_free(cn);
	return listed;
}

/*
 * OpenSSL's verification of a client's chain, each certificate in turn,
 * root first: to its verdict on the client's own certificate (depth 0)
 * this adds [tls] client_cn, the list the context's app data points to.
 * A refusal fails the handshake with a bad_certificate alert.
 */
static int
tls_verify_cb(int ok, X509_STORE_CTX *store)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(store,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	const char *list;
	X509 *cert = X509_STORE_CTX_get_current_cert(store);
	char subject[TLS_SUBJECT_MAX], peer[TLS_PEER_MAX];

	if (!ok || X509_STORE_CTX_get_error_depth(store) != 0 || ssl == NULL ||
	    cert == NULL)
		return ok;
	list = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	tls_subject(cert, subject, sizeof(subject));
	tls_peer(ssl, peer, sizeof(peer));
	if (list != NULL && !tls_cn_listed(cert, list)) {
		log_warnx("%s: %s: client certificate '%s' is not one of "
		    "[tls] client_cn; refused", __func__, peer, subject);
		X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	log_debug("%s: %s: client certificate '%s'", __func__, peer, subject);
	return 1;
}

SSL_CTX *
tls_context_new(const struct config *cfg, char **cause)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		*cause = tls_error("cannot create a context", NULL);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1) {
		*cause = tls_error("cannot load the certificate", cfg->tls_cert);
		goto err;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key,
	    SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		*cause = tls_error("cannot load the key", cfg->tls_key);
		goto err;
	}
	if (cfg->tls_client_ca != NULL) {
		STACK_OF(X509_NAME) *names;

		if (SSL_CTX_load_verify_locations(ctx, cfg->tls_client_ca,
		    NULL) != 1 || (names = SSL_load_client_CA_file(
		    cfg->tls_client_ca)) == NULL) {
			*cause = tls_error("cannot load the client CA",
			    cfg->tls_client_ca);
			goto err;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		/* The list is cfg's, which outlives the context. */
		SSL_CTX_set_app_data(ctx, cfg->tls_client_cn);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
		    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, tls_verify_cb);
		if (SSL_CTX_set_session_id_context(ctx, (const unsigned char *)
		    TLS_SESSION_ID_CONTEXT, sizeof(TLS_SESSION_ID_CONTEXT) -
		    1) != 1) {
			*cause = tls_error("cannot set the session id context",
			    NULL);
			goto err;
		}
	}
	return ctx;
err:
	SSL_CTX_free(ctx);
	return NULL;
}
