# syntax=docker/dockerfile:1
# Multi-stage build of a static hookrun binary that runs as a non-root user.
# (Production image; the tests never build it: there is no registry here.)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/hookrun ./cmd/hookrun

FROM alpine:3.20
# git: workspaces are checked out from a mirror cache; sh: host steps.
RUN apk add --no-cache git ca-certificates \
 && adduser -D -H -u 10001 hookrun \
 && mkdir -p /var/lib/hookrun && chown hookrun /var/lib/hookrun
COPY --from=build /out/hookrun /usr/local/bin/hookrun
USER 10001
WORKDIR /var/lib/hookrun
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hookrun"]
CMD ["serve", "--config", "/etc/hookrun/hookrun.yaml"]
