# frozen_string_literal: true

require "digest"
require "pathname"
require "uri"

require_relative "mime"

module LlmFailover
  # A file sent with a user message (Chat#ask's with:): an image (PNG, JPEG, GIF,
  # WebP) or a PDF, in one canonical form whatever it came from: its bytes and/or a
  # URL, its type, a file name and a digest of its content. The store keeps this form;
  # the wire layer renders it per protocol when a call is sent, so a failover from one
  # protocol to the other sends the same files.
  class Attachment
    MIB = 1024 * 1024
    # A file larger than this is refused unless a provider says more
    # (c.provider ..., max_attachment_bytes:).
    MAX_BYTES = 20 * MIB
    # More files than this with one message are refused unless a provider says more.
    MAX_COUNT = 20

    # @return [String, nil] the bytes (binary), nil for a URL not downloaded
    attr_reader :data
    # @return [String, nil] where the file is, when it was given as a URL
    attr_reader :url
    # @return [String] one of Mime::KINDS
    attr_reader :mime_type
    # @return [String, nil]
    attr_reader :filename
    # @return [String] SHA-256 (hex) of the bytes; of the URL while only a URL is known
    attr_reader :digest
    # @return [Object, nil] the ActiveStorage blob it was read from (given a blob, or an
    #   attachment's blob): a store with ActiveStorage attaches that blob to the message
    #   instead of uploading the bytes again
    attr_reader :blob

    # The canonical form of +source+: a path (String or Pathname), a URL String
    # ("http://", "https://"), an IO (anything with #read; an uploaded file's
    # original_filename and content_type are used), an ActiveStorage blob or attachment
    # (anything with #download, #content_type and #filename; no dependency on it), or a
    # Hash { data:, mime_type:, filename: } / { url:, mime_type:, filename: }.
    # @param max_bytes [Integer] the largest file taken, checked before it is read
    #   where the size is known
    # @return [Attachment]
    # @raise [ArgumentError] naming the file: unreadable, too large, not an image or PDF
    def self.from(source, max_bytes: MAX_BYTES)
      return source.check_size(max_bytes) if source.is_a?(Attachment)

      case source
      when Hash then from_hash(source, max_bytes)
      when Pathname then from_path(source.to_s, max_bytes)
      when String then source.match?(%r{\Ahttps?://}i) ? from_url(source, nil, nil) : from_path(source, max_bytes)
      else
        if source.respond_to?(:download) && source.respond_to?(:content_type) && source.respond_to?(:filename)
          from_blob(source, max_bytes)
        elsif source.respond_to?(:read)
          from_io(source, max_bytes)
        else
          raise ArgumentError, "an attachment is a path, a URL, an IO, an ActiveStorage blob or " \
                               "{ data:, mime_type:, filename: }, got #{source.class}"
        end
      end
    end

    # @param data [String, nil] bytes, or nil with a url
    def initialize(mime_type:, data: nil, url: nil, filename: nil, blob: nil)
      raise ArgumentError, "an attachment needs data: or url:" if data.nil? && url.nil?

      @data = data&.b&.freeze
      @url = url&.dup&.freeze
      @filename = filename&.to_s&.dup&.freeze
      @blob = blob
      @mime_type = Mime.normalize(mime_type)
      check_type
      @digest = Digest::SHA256.hexdigest(@data || "url:#{@url}").freeze
      # The base64 form, made on first use and kept: every call (a complete, a tool
      # loop's turns, a failover's both protocols) sends the same String. The object
      # is frozen; this one-slot box is not.
      @encoded = []
      freeze
    end

    # @api private
    # An attachment whose bytes are known as base64 already (a stored column): decoded
    # once, and that text kept as its #base64.
    # @return [Attachment]
    def self.from_base64(text, mime_type:, url: nil, filename: nil)
      new(mime_type: mime_type, data: text.unpack1("m0"), url: url, filename: filename).encoded(text)
    end

    # @return [Symbol] :image or :document
    def kind
      Mime.kind(mime_type)
    end

    # @return [Integer, nil] bytes, nil while only a URL is known
    def size
      data&.bytesize
    end

    # How messages name the file.
    def name
      filename || (url && File.basename(URI(url).path.to_s)) || "the #{mime_type} attachment"
    rescue URI::InvalidURIError
      url
    end

    # @return [String, nil] the bytes as base64 (strict, no line breaks), what both
    #   protocols carry; encoded once, frozen, the same String on every call
    def base64
      return nil unless data

      @encoded[0] ||= [data].pack("m0").freeze
    end

    # @api private
    # @return [self] with +text+ (the base64 of its bytes) as its #base64
    def encoded(text)
      @encoded[0] ||= text.frozen? ? text : text.dup.freeze
      self
    end

    # @return [Attachment] this URL attachment with the bytes downloaded from it
    def with_data(bytes)
      Attachment.new(mime_type: mime_type, data: bytes, url: url, filename: filename, blob: blob)
    end

    # @api private
    # @return [self]
    # @raise [ArgumentError] larger than +max_bytes+
    def check_size(max_bytes)
      Attachment.check_size(name, size, max_bytes) if size
      self
    end

    # What the cache key and a stored message hold of it: never the bytes.
    def to_h
      { mime_type: mime_type, filename: filename, url: url, digest: digest, size: size }
    end

    def ==(other)
      other.is_a?(Attachment) && other.digest == digest && other.mime_type == mime_type && other.url == url
    end
    alias eql? ==

    def hash
      digest.hash
    end

    def inspect
      "#<#{self.class.name} #{name.inspect} #{mime_type} #{size ? "#{size} bytes" : url_shown}>"
    end
    alias to_s inspect

    # @api private
    def self.check_size(name, size, max_bytes)
      return if size <= max_bytes

      raise ArgumentError, "attachment #{name.inspect} is #{size} bytes, over the limit of #{max_bytes} bytes"
    end

    class << self
      private

      def from_path(path, max_bytes)
        raise ArgumentError, "attachment #{path.inspect}: no such file" unless File.file?(path)

        check_size(File.basename(path), File.size(path), max_bytes)
        from_bytes(File.binread(path), File.basename(path), nil)
      rescue SystemCallError => e
        raise ArgumentError, "attachment #{path.inspect} cannot be read: #{e.message}"
      end

      def from_io(io, max_bytes)
        name = io.respond_to?(:original_filename) ? io.original_filename : nil
        name ||= File.basename(io.path) if io.respond_to?(:path) && io.path
        # A size the IO knows (a File, a Rails upload) is refused before any read, and
        # said as it is.
        check_size(name || "the IO attachment", io.size, max_bytes) if io.respond_to?(:size) && io.size.is_a?(Integer)
        # One byte past the limit tells a file over it without reading all of it.
        bytes = io.read(max_bytes + 1).to_s
        check_size(name || "the IO attachment", bytes.bytesize, max_bytes) if bytes.bytesize > max_bytes
        from_bytes(bytes, name, io.respond_to?(:content_type) ? io.content_type : nil)
      end

      def from_blob(blob, max_bytes)
        name = blob.filename.to_s
        check_size(name, blob.byte_size, max_bytes) if blob.respond_to?(:byte_size) && blob.byte_size
        bytes = blob.download.to_s
        check_size(name, bytes.bytesize, max_bytes)
        from_bytes(bytes, name, blob.content_type, blob: blob.respond_to?(:blob) ? blob.blob : blob)
      end

      def from_hash(hash, max_bytes)
        unknown = hash.keys - %i[data mime_type filename url]
        raise ArgumentError, "attachment: unknown keys #{unknown.map(&:inspect).join(', ')}" unless unknown.empty?
        return from_url(hash[:url], hash[:mime_type], hash[:filename]) if hash[:url] && hash[:data].nil?

        data = hash[:data]
        raise ArgumentError, "attachment: data: must be a String of bytes, got #{data.class}" unless data.is_a?(String)

        name = hash[:filename]
        check_size(name || "the data attachment", data.bytesize, max_bytes)
        from_bytes(data, name, hash[:mime_type], url: hash[:url])
      end

      # A URL is kept as it is: sent as a URL where the target takes one, downloaded
      # once before the call where it does not (Attachment::Download).
      def from_url(url, mime_type, filename)
        type = Mime.normalize(mime_type) || Mime.from_name(url)
        unless type
          raise ArgumentError, "attachment #{url_name(url).inspect}: the URL does not end in " \
                               "#{Mime::EXTENSIONS.keys.join(' ')}; give { url:, mime_type: }"
        end
        new(mime_type: type, url: url, filename: filename)
      end

      # The bytes say what they are; a declared type must agree.
      def from_bytes(bytes, name, declared, url: nil, blob: nil)
        sniffed = Mime.sniff(bytes)
        declared = Mime.normalize(declared)
        shown = (name || "the attachment").inspect
        unless sniffed
          raise ArgumentError, "attachment #{shown} is not a PNG, JPEG, GIF, WebP image or a PDF" \
                               "#{" (declared #{declared})" if declared}"
        end
        if declared && declared != sniffed && declared != "application/octet-stream"
          raise ArgumentError, "attachment #{shown} is declared #{declared} but its bytes are #{sniffed}"
        end
        new(mime_type: sniffed, data: bytes, filename: name, url: url, blob: blob)
      end

      def url_name(url)
        File.basename(URI(url).path.to_s)
      rescue URI::InvalidURIError
        "the URL attachment"
      end
    end

    private

    def check_type
      return if Mime.kind(@mime_type)

      raise ArgumentError, "attachment #{name.inspect}: type #{@mime_type.inspect} is not one of " \
                           "#{Mime::KINDS.keys.join(', ')}"
    end

    # A URL in inspect without its query (a signed URL's token) or credentials.
    def url_shown
      uri = URI(url)
      "#{uri.scheme}://#{uri.host}#{uri.path}"
    rescue URI::InvalidURIError
      "a URL"
    end
  end
end
