# frozen_string_literal: true

require "uri"

require_relative "../attachments/attachment"
require_relative "../errors"
require "llm_failover/llm_failover" # Engine::Target
require_relative "../chat/target"
require_relative "../safe_inspect"

module LlmFailover
  # One configured provider: a name the app chooses (:openai, :groq, ...), the wire
  # protocol it speaks, where it lives and its key. The key is readable by the gem
  # but never shown by #inspect or #to_s.
  class ProviderConfig
    include SafeInspect

    APIS = %i[openai anthropic].freeze

    # Where each protocol lives when no base_url is given; the engine appends
    # "/chat/completions" (OpenAI) or "/v1/messages" (Anthropic).
    DEFAULT_BASE_URLS = {
      openai: "https://api.openai.com/v1",
      anthropic: "https://api.anthropic.com"
    }.freeze

    REDACTED = "[REDACTED]"

    MODELS_KEPT = 32

    # A header name is an RFC 9110 token.
    HEADER_NAME = /\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\z/.freeze
    # CR, LF and NUL would let a value smuggle extra header lines or cut a C string.
    FORBIDDEN_CHARS = /[\r\n\0]/.freeze

    attr_reader :name, :api, :base_url, :headers
    # @return [Hash] what the provider takes as attachments: { images:, documents:, urls:,
    #   max_bytes:, max_count: }
    attr_reader :attachments

    # +url+ as a message or #inspect may quote it: credentials (userinfo), query values
    # and the fragment replaced by [REDACTED]. The one redactor of URLs (provider base
    # URLs, the Redis state store's URL). A URL that does not parse loses everything up to
    # its last "@" as well (where its credentials would end).
    # @param url [String]
    # @return [String]
    def self.shown_url(url)
      text = url.to_s
      uri = begin
        URI.parse(text)
      rescue URI::InvalidURIError
        nil
      end
      shown = if uri&.host
                text = text.sub("//#{uri.userinfo}@", "//#{REDACTED}@") if uri.userinfo
                text
              else
                text.sub(%r{\A((?:[A-Za-z][A-Za-z0-9+.-]*://)?).*@}m) { "#{Regexp.last_match(1)}#{REDACTED}@" }
              end
      # partition, not split: "" or "#" split into nothing, and the base would be nil.
      shown, hash, = shown.partition("#")
      base, question, query = shown.partition("?")
      unless question.empty?
        query = query.split("&", -1).map { |pair| pair.include?("=") ? "#{pair[/\A[^=]*/]}=#{REDACTED}" : REDACTED }
        base = "#{base}?#{query.join('&')}"
      end
      hash.empty? ? base : "#{base}##{REDACTED}"
    end

    # @raise [ConfigurationError] on anything the engine could not use
    # Attachments: images: / documents: false say the provider's models take no images /
    # no PDFs (a call with one goes to a target that does, or is refused);
    # attachment_urls: false, that it is sent the bytes of a URL attachment, not the
    # URL; max_attachment_bytes: / max_attachments: its limits per file and per message.
    def initialize(name, api:, api_key:, base_url: nil, headers: {}, images: true, documents: true,
                   attachment_urls: true, max_attachment_bytes: Attachment::MAX_BYTES,
                   max_attachments: Attachment::MAX_COUNT)
      @name = validate_name(name)
      @api = validate_api(api)
      @api_key = validate_key(api_key)
      @base_url = validate_base_url(base_url.nil? ? DEFAULT_BASE_URLS.fetch(@api) : base_url)
      @headers = validate_headers(headers).freeze
      @attachments = validate_attachments(images: images, documents: documents, urls: attachment_urls,
                                          max_bytes: max_attachment_bytes, max_count: max_attachments)
      @per_model = {} # model => what every call to it shares (#per_model); the one mutable part
      freeze
    end

    # @return [String] the secret; only the engine request and the redactor read it
    def api_key
      @api_key
    end

    # @api private: the engine's description of one target (an Engine::Target, whose
    # #inspect leaves out the key and headers).
    def engine_target(model)
      target(model).engine
    end

    # @api private: +model+ asked of this provider, as a frozen Target.
    def target(model)
      @per_model[model] || per_model(model)
    end

    def inspect
      shown = headers.keys.map { |k| "#{k}: #{REDACTED}" }.join(", ")
      "#<#{self.class.name} #{name.inspect} api=#{api} base_url=#{base_url} " \
        "api_key=#{REDACTED}#{" headers={#{shown}}" unless headers.empty?}>"
    end

    private

    # What every call to +model+ shares, built once and frozen: the Target, holding
    # its Engine::Target. Kept for a handful of models per provider (dropped past
    # MODELS_KEPT).
    def per_model(model)
      @per_model.clear if @per_model.size >= MODELS_KEPT
      model = model.dup.freeze unless model.frozen?
      engine = Engine::Target.new(key: Target.key(name, model), api: api, base_url: base_url, api_key: @api_key,
                                  model: model, headers: headers, images: @attachments[:images],
                                  documents: @attachments[:documents], attachment_urls: @attachments[:urls],
                                  max_attachment_bytes: @attachments[:max_bytes],
                                  max_attachments: @attachments[:max_count]).freeze
      @per_model[model] = Target.build(model, self, engine)
    end

    def fail!(message)
      raise ConfigurationError, "provider #{@name.inspect}: #{message}"
    end

    def validate_name(name)
      unless (name.is_a?(Symbol) || name.is_a?(String)) && !name.to_s.strip.empty?
        raise ConfigurationError, "provider name must be a non-empty Symbol or String, got #{name.class}"
      end

      name.to_sym
    end

    def validate_api(api)
      sym = api.respond_to?(:to_sym) ? api.to_sym : nil
      return sym if APIS.include?(sym)

      fail!("unknown api #{api.inspect} (known: #{APIS.map(&:inspect).join(', ')})")
    end

    # The key's value is never put in a message, not even in part.
    def validate_key(key)
      fail!("api_key is missing (nil); is its environment variable set?") if key.nil?
      fail!("api_key must be a String, got #{key.class}") unless key.is_a?(String)
      fail!("api_key is empty") if key.strip.empty?
      fail!("api_key contains a CR, LF or NUL character (a pasted newline?)") if key.match?(FORBIDDEN_CHARS)

      key.dup.freeze
    end

    # The one normalisation of a base_url (the engine appends the endpoint path to it as
    # it is). Messages show it through ProviderConfig.shown_url: a URL may carry a password.
    def validate_base_url(url)
      fail!("base_url must be a String, got #{url.class}") unless url.is_a?(String)
      uri = begin
        URI.parse(url)
      rescue URI::InvalidURIError
        nil
      end
      unless uri && %w[http https].include?(uri.scheme&.downcase) && uri.host && !uri.host.empty?
        fail!("base_url must be an http:// or https:// URL, got #{ProviderConfig.shown_url(url).inspect}")
      end
      if uri.query || uri.fragment
        fail!("base_url must not carry a query or fragment, got #{ProviderConfig.shown_url(url).inspect}")
      end
      fail!("base_url must not carry credentials, got #{ProviderConfig.shown_url(url).inspect}") if uri.userinfo

      # A trailing slash would double the one the endpoint path starts with.
      url.sub(%r{/+\z}, "").freeze
    end

    def validate_attachments(**options)
      %i[images documents urls].each do |key|
        next if [true, false].include?(options[key])

        fail!("#{key == :urls ? 'attachment_urls' : key} must be true or false, got #{options[key].inspect}")
      end
      { max_bytes: "max_attachment_bytes", max_count: "max_attachments" }.each do |key, shown|
        fail!("#{shown} must be a positive Integer, got #{options[key].inspect}") unless options[key].is_a?(Integer) && options[key].positive?
      end
      options.freeze
    end

    def validate_headers(headers)
      fail!("headers must be a Hash, got #{headers.class}") unless headers.is_a?(Hash)

      headers.each_with_object({}) do |(key, value), out|
        name = key.to_s
        fail!("header name #{name.inspect} is not a valid HTTP header name") unless name.match?(HEADER_NAME)
        # Values may be secrets (Authorization): name the header, never show the value.
        fail!("header #{name} must have a String value, got #{value.class}") unless value.is_a?(String)
        fail!("header #{name} value contains a CR, LF or NUL character") if value.match?(FORBIDDEN_CHARS)

        out[name.dup.freeze] = value.dup.freeze
      end
    end
  end
end
