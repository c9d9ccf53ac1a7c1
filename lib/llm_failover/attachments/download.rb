# frozen_string_literal: true

require "ipaddr"
require "net/http"
require "socket"
require "uri"

require_relative "attachment"
require_relative "mime"

module LlmFailover
  class Attachment
    # Fetches a URL attachment's bytes once, for a target that takes no URL for it.
    # Rules: http or https only; every address the host resolves to, and every
    # redirect's, must be public (no loopback, private, link-local or unspecified
    # address, unless allow_private: true, for tests); at most MAX_REDIRECTS; the body
    # no larger than max_bytes (read in pieces, cut at the limit); its Content-Type and
    # its bytes one of the attachment types, and the one the attachment declared.
    # Messages show a URL without its credentials and query (a signed URL's token).
    class Download
      MAX_REDIRECTS = 3

      def initialize(max_bytes:, allow_private: false, timeout: 30)
        @max_bytes = max_bytes
        @allow_private = allow_private
        @timeout = timeout
      end

      # @return [Attachment] +attachment+ with its bytes
      # @raise [ArgumentError] naming the URL (shown without credentials or query)
      def call(attachment)
        uri = parse(attachment.url)
        # The whole download, redirects included: a server that drips its body a
        # byte at a time, each within the read timeout, would otherwise hold the ask.
        @deadline = now + @timeout
        (MAX_REDIRECTS + 1).times do
          response_uri, bytes, type = fetch(uri)
          return checked(attachment, bytes, type) if bytes

          uri = response_uri
        end
        fail!(attachment.url, "more than #{MAX_REDIRECTS} redirects")
      end

      # +url+ without userinfo, query or fragment: how messages and logs show it.
      def self.shown(url)
        uri = URI(url.to_s)
        "#{uri.scheme}://#{uri.host}#{":#{uri.port}" if uri.port != uri.default_port}#{uri.path}"
      rescue URI::InvalidURIError
        "(a URL that does not parse)"
      end

      private

      def parse(url)
        uri = URI(url)
        fail!(url, "only http and https URLs are downloaded") unless %w[http https].include?(uri.scheme&.downcase)
        fail!(url, "the URL has no host") if uri.host.nil? || uri.host.empty?
        uri
      rescue URI::InvalidURIError
        fail!(url, "the URL does not parse")
      end

      # [next URI, nil, nil] for a redirect; [uri, bytes, content type] for the body.
      def fetch(uri)
        address = public_address(uri)
        http = Net::HTTP.new(uri.hostname, uri.port) # an IPv6 literal without its brackets
        http.ipaddr = address # the address checked is the one connected to
        http.use_ssl = uri.scheme.casecmp?("https")
        http.open_timeout = http.read_timeout = @timeout
        http.start do
          request = Net::HTTP::Get.new(uri.request_uri)
          request.basic_auth(URI.decode_www_form_component(uri.user), URI.decode_www_form_component(uri.password.to_s)) if uri.user
          http.request(request) { |response| return read(uri, response) }
        end
      rescue SocketError, SystemCallError, Net::OpenTimeout, Net::ReadTimeout, OpenSSL::SSL::SSLError, IOError => e
        fail!(uri.to_s, "#{e.class}: #{e.message.gsub(uri.to_s, self.class.shown(uri))}")
      end

      def read(uri, response)
        case response
        when Net::HTTPRedirection
          location = response["location"] or fail!(uri.to_s, "a redirect without a Location")
          [parse(uri.merge(location).to_s), nil, nil]
        when Net::HTTPSuccess
          length = response["content-length"]&.to_i
          fail!(uri.to_s, "#{length} bytes, over the limit of #{@max_bytes} bytes") if length && length > @max_bytes
          body = +"".b
          response.read_body do |piece|
            body << piece
            fail!(uri.to_s, "more than #{@max_bytes} bytes, over the limit") if body.bytesize > @max_bytes
            fail!(uri.to_s, "not done within #{@timeout} s") if now > @deadline
          end
          [uri, body, response["content-type"]]
        else
          fail!(uri.to_s, "HTTP #{response.code}")
        end
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end

      def public_address(uri)
        addresses = Addrinfo.getaddrinfo(uri.hostname, uri.port, nil, :STREAM).map(&:ip_address).uniq
        fail!(uri.to_s, "the host does not resolve") if addresses.empty?
        unless @allow_private
          blocked = addresses.find { |a| private_address?(a) }
          fail!(uri.to_s, "the host resolves to #{blocked}, a private or loopback address") if blocked
        end
        addresses.first
      end

      # Ranges no public file is served from, beyond loopback, private and link-local:
      # "this network", carrier-grade NAT, benchmarking, multicast and reserved IPv4;
      # unique-local, site-local and multicast IPv6.
      BLOCKED = %w[0.0.0.0/8 100.64.0.0/10 198.18.0.0/15 224.0.0.0/4 240.0.0.0/4
                   fc00::/7 fec0::/10 ff00::/8].map { |range| IPAddr.new(range) }.freeze
      # IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, the
      # IPv4-compatible form): the embedded address is checked as well.
      EMBEDDING = %w[64:ff9b::/96 ::/96].map { |range| IPAddr.new(range) }.freeze
      private_constant :BLOCKED, :EMBEDDING

      def private_address?(text)
        ip = IPAddr.new(text)
        ip = ip.native if ip.ipv6? && ip.ipv4_mapped?
        if ip.ipv6? && EMBEDDING.any? { |range| range.include?(ip) } && !ip.to_i.zero? && ip != IPAddr.new("::1")
          ip = IPAddr.new(ip.to_i & 0xFFFF_FFFF, Socket::AF_INET)
        end
        ip.loopback? || ip.private? || ip.link_local? || ip.to_i.zero? ||
          BLOCKED.any? { |range| range.family == ip.family && range.include?(ip) }
      end

      def checked(attachment, bytes, type)
        declared = Mime.normalize(type)
        if declared && !Mime.kind(declared) && declared != "application/octet-stream"
          fail!(attachment.url, "served as #{declared}, not an image or a PDF")
        end
        sniffed = Mime.sniff(bytes)
        fail!(attachment.url, "its bytes are not a PNG, JPEG, GIF, WebP image or a PDF") unless sniffed
        if sniffed != attachment.mime_type
          fail!(attachment.url, "its bytes are #{sniffed}, not the #{attachment.mime_type} it was given as")
        end
        attachment.with_data(bytes)
      end

      def fail!(url, why)
        raise ArgumentError, "attachment #{self.class.shown(url).inspect} could not be downloaded: #{why}"
      end
    end
  end
end
