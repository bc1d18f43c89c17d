# nanlog-bpf container image (docs/kubernetes.md). x86-64 only, like the build.
#
#   docker build -t registry.example.com/nanlog-bpf:0.1.0 .
#
# The build stage runs the build steps CI runs, through the same script
# (scripts/ci-build.sh), and the unit tests; the end-to-end tests need root,
# BPF and uprobes, which an image build does not have, so only CI runs them.
# The runtime stage is the tool and its shared libraries on Debian 12 slim.
# This file is checked by tests/e2e/test_deploy.sh; no image is built in CI.

FROM debian:bookworm AS build
WORKDIR /src
# the dependencies in a layer of their own: rebuilt only when the package
# list or the build script changes
COPY Makefile ./
COPY scripts/ci-build.sh scripts/deps.sh scripts/
RUN ./scripts/ci-build.sh deps
COPY . .
RUN ./scripts/ci-build.sh build unit

# The package stage builds the Debian package from the build stage's tree
# with CI's own step (make deb, docs/packaging.md). That tree has no .git:
# hand the version in, so that the image's is the tree's:
#   --build-arg NANLOG_VERSION=$(scripts/version.sh)
# (without it, the VERSION file's).
FROM build AS package
ARG NANLOG_VERSION
RUN ./scripts/ci-build.sh deb

FROM debian:bookworm-slim
# the package, installed with apt, which also installs the libraries it
# depends on (its Depends, from the binary: ${shlibs:Depends}); its systemd
# unit and logrotate snippet are inert in a container
COPY --from=package /src/build/deb/ /tmp/deb/
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/deb/nanlog-bpf_*_amd64.deb \
	&& rm -rf /var/lib/apt/lists/* /tmp/deb
# Root with the capabilities the pod grants (deploy/kubernetes/*.yaml: BPF,
# PERFMON, SYS_PTRACE and nothing else); the tool drops what it does not
# keep after attaching and sets no_new_privs.
USER 0:0
ENTRYPOINT ["/usr/sbin/nanlog-bpf"]
CMD ["--help"]
