# frozen_string_literal: true

require "uri"

require_relative "../attachments/attachment"
require_relative "../errors"
require_relative "credentials"
require_relative "host"
require "llm_failover/llm_failover" # Engine::Target
require_relative "../chat/target"
require_relative "../safe_inspect"

module LlmFailover
  # One configured provider: a name the app chooses (:openai, :groq, ...), the wire
  # protocol it speaks, where it lives and its key. The key is readable by the gem
  # but never shown by #inspect or #to_s.
  class ProviderConfig
    include SafeInspect

    APIS = Host::APIS

    REDACTED = "[REDACTED]"

    MODELS_KEPT = 32

    # A header name is an RFC 9110 token.
    HEADER_NAME = /\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\z/.freeze
    # CR, LF and NUL would let a value smuggle extra header lines or cut a C string.
    FORBIDDEN_CHARS = /[\r\n\0]/.freeze

    attr_reader :name, :headers
    # @return [Host] where it lives: base_url, layout, the protocol of each model
    attr_reader :host
    # @return [Hash] what the provider takes as attachments: { images:, documents:, urls:,
    #   max_bytes:, max_count: }
    attr_reader :attachments
    # @return [Hash{String => String}] models: a logical model name => this host's id (frozen)
    attr_reader :models

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

    # @raise [ConfigurationError] on anything the engine could not use, before any HTTP
    # Where and how (Host): api:, base_url: (a default per api), Azure's azure_api: and
    # api_version:, Vertex AI's project: and location:, Bedrock's region:. The credential
    # (Credentials): api_key:, or where the host takes one, access_token: (a String or a
    # token source), Vertex AI's credentials: (a service account file) or Bedrock's
    # credentials: (AWS's, a Hash or a source); without, the ambient ones (Credentials.ambient).
    # models: a logical model name => this host's id (reply.model and the records say
    # the logical one). encrypted_reasoning: the Responses API's reasoning items asked for
    # and sent back (true, false, or the models that reason: names or Regexps; a model that
    # does not reason answers the ask with a 400). Attachments: images: / documents: false
    # say the provider's models take no images / no PDFs (a call with one goes to a target
    # that does, or is refused); attachment_urls: false, that it is sent the bytes of a URL
    # attachment, not the URL; max_attachment_bytes: / max_attachments: its limits per file
    # and per message.
    def initialize(name, api:, api_key: nil, access_token: nil, credentials: nil, base_url: nil, headers: {},
                   models: {}, azure_api: nil, api_version: nil, project: nil, location: nil, region: nil,
                   encrypted_reasoning: false, images: true, documents: true, attachment_urls: true,
                   max_attachment_bytes: Attachment::MAX_BYTES, max_attachments: Attachment::MAX_COUNT)
      @name = validate_name(name)
      @host = Host.new(@name, api: api, base_url: base_url, azure_api: azure_api, api_version: api_version,
                              project: project, location: location, region: region)
      @credential = Credentials.for(@host, api_key: api_key, access_token: access_token, credentials: credentials)
      @headers = validate_headers(headers).freeze
      @models = validate_models(models)
      @encrypted_reasoning = validate_encrypted_reasoning(encrypted_reasoning)
      @attachments = validate_attachments(images: images, documents: documents, urls: attachment_urls,
                                          max_bytes: max_attachment_bytes, max_count: max_attachments)
      # The keywords it was built with, but base_url (Testing points it elsewhere).
      @options = { api: api, api_key: api_key, access_token: access_token, credentials: credentials,
                   headers: headers, models: models, azure_api: azure_api, api_version: api_version,
                   project: project, location: location, region: region, encrypted_reasoning: encrypted_reasoning, images: images, documents: documents,
                   attachment_urls: attachment_urls, max_attachment_bytes: max_attachment_bytes,
                   max_attachments: max_attachments }.compact.freeze
      @per_model = {} # model => [credential, Target] (#target); the one mutable part
      @per_model_lock = Mutex.new
      freeze
    end

    # @return [Symbol] the api it was configured with (:openai, :azure, :vertex, ...)
    def api
      @host.api
    end

    # @return [String] the base URL the host's route and the protocol's path go after
    def base_url
      @host.base_url
    end

    # @return [String, nil] the key given as api_key: (or a token given as a String);
    #   nil for a source or AWS credentials. Only the engine request and the redactor read it.
    def api_key
      @credential.is_a?(Credentials::Key) ? @credential.current : nil
    end

    # @return [Credentials::Key, Credentials::TokenSource, Credentials::AwsSource, Credentials::AwsKeysGiven]
    #   where its credential comes from (never shown)
    def credential
      @credential
    end

    # @api private: the keywords this provider was declared with, but base_url: what
    # LlmFailover::Testing declares it again with (secrets included: never shown)
    # @return [Hash]
    def options
      @options
    end

    # @param model [String] the model as a chat names it
    # @return [String] the model as this host names it (models:), the same without an alias
    def host_model(model)
      @models.fetch(model, model)
    end

    # @api private: the engine's description of one target (an Engine::Target, whose
    # #inspect leaves out the key and headers).
    def engine_target(model)
      target(model).engine
    end

    # @api private: +model+ asked of this provider, as a frozen Target holding the
    # credential a call sends now (a token source asked when its token is about to expire:
    # a new Target then).
    # @raise [ConfigurationError] the credential's source failed
    def target(model)
      credential = @credential.current
      entry = @per_model[model]
      return entry.last if entry && entry.first.equal?(credential)

      @per_model_lock.synchronize { per_model(model, credential) }
    end

    # @api private: +model+ asked of this provider when its credential source failed with
    #   +error+ (a pool's host, PoolConfig#target): a Target whose engine sends nothing
    #   and fails a call that goes to it with +error+'s message (its Engine::Target's
    #   unusable), built anew for each call so that the source is asked again
    # @param error [ConfigurationError] naming this provider, free of secrets
    # @return [Target]
    def unusable_target(model, error)
      model = model.dup.freeze unless model.frozen?
      build_target(model, error, api_key: nil, bearer: false, unusable: error.message.dup.freeze)
    end

    def inspect
      shown = headers.keys.map { |k| "#{k}: #{REDACTED}" }.join(", ")
      aliases = @models.empty? ? "" : " models=#{@models.keys.inspect}"
      "#<#{self.class.name} #{name.inspect} api=#{api} base_url=#{base_url} " \
        "#{@credential.option}=#{REDACTED}#{" headers={#{shown}}" unless headers.empty?}" \
        "#{aliases}>"
    end

    private

    # What every call to +model+ shares, built once per credential and frozen: the Target,
    # holding its Engine::Target. Kept for a handful of models per provider (dropped past
    # MODELS_KEPT). Under the lock.
    def per_model(model, credential)
      entry = @per_model[model]
      return entry.last if entry && entry.first.equal?(credential)

      @per_model.clear if @per_model.size >= MODELS_KEPT
      model = model.dup.freeze unless model.frozen?
      target = build_target(model, nil, **@credential.engine_fields(credential))
      @per_model[model] = [credential, target].freeze
      target
    end

    # The frozen Target of +model+, its engine's credential members +credential_fields+.
    def build_target(model, credential_error, **credential_fields)
      host_model = host_model(model)
      engine = Engine::Target.new(key: Target.key(name, model), api: @host.protocol(host_model), base_url: base_url,
                                  model: host_model, headers: headers,
                                  images: @attachments[:images], documents: @attachments[:documents],
                                  attachment_urls: @attachments[:urls], max_attachment_bytes: @attachments[:max_bytes],
                                  max_attachments: @attachments[:max_count], layout: @host.layout,
                                  api_version: @host.api_version, vertex: @host.vertex, region: @host.region,
                                  origin: name.to_s.freeze, encrypted_reasoning: encrypted_reasoning?(model, host_model),
                                  **credential_fields).freeze
      Target.build(model, self, engine, credential_error: credential_error)
    end

    # Whether the Responses API is asked for +model+'s reasoning items (the logical name
    # or the host's id matches).
    def encrypted_reasoning?(model, host_model)
      case @encrypted_reasoning
      when true, false then @encrypted_reasoning
      else @encrypted_reasoning.any? { |m| [model, host_model].any? { |name| m === name } } # rubocop:disable Style/CaseEquality
      end
    end

    def fail!(message)
      Host.refuse!(@name, message)
    end

    def validate_name(name)
      unless (name.is_a?(Symbol) || name.is_a?(String)) && !name.to_s.strip.empty?
        raise ConfigurationError, "provider name must be a non-empty Symbol or String, got #{name.class}"
      end

      name.to_sym
    end

    # models: { "logical name" => "the host's id" }, both model names (ModelName's rule).
    def validate_models(models)
      fail!("models must be a Hash of model name => this host's id, got #{models.class}") unless models.is_a?(Hash)

      models.each_with_object({}) do |(logical, id), out|
        [logical, id].each do |m|
          fail!("models: #{m.inspect} is not a model name (a non-empty String)") unless m.is_a?(String) && !m.strip.empty?
          fail!("models: #{m.inspect} contains a CR, LF or NUL character") if m.match?(FORBIDDEN_CHARS)
        end
        out[logical.dup.freeze] = id.dup.freeze
      end.freeze
    end

    # The Responses API's only (on OpenAI, or Azure with azure_api: :responses).
    def validate_encrypted_reasoning(value)
      return false if value == false

      list = value == true || (value.is_a?(Array) && value)
      unless list == true || (list && list.all? { |m| m.is_a?(String) || m.is_a?(Regexp) })
        fail!("encrypted_reasoning must be true, false or a list of model names and Regexps, got #{value.inspect}")
      end
      unless %i[responses azure].include?(api) && @host.protocol("") == :responses
        fail!("encrypted_reasoning: is for the Responses API (api: :responses, or :azure with azure_api: :responses)")
      end
      list == true ? true : list.map { |m| m.frozen? ? m : m.dup.freeze }.freeze
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
