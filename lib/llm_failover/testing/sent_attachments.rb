# frozen_string_literal: true

module LlmFailover
  module Testing
    class FakeProvider
      # A file a request carried, read back from its protocol's form: OpenAI-compatible
      # content parts (image_url with a data URI or a URL; file with file_data), Responses
      # input items (input_image, input_file), Anthropic blocks (image, document; a base64 or
      # url source), Bedrock's (image, document; their bytes) or Gemini parts (inlineData
      # with base64 data, fileData with a fileUri). data is the decoded
      # bytes (nil when only a URL was sent); part is the part or block as sent, so a
      # test can check the protocol's own form.
      SentAttachment = Struct.new(:kind, :mime_type, :data, :url, :filename, :role, :part, keyword_init: true) do
        # @return [Boolean] sent as a URL rather than its bytes
        def url?
          !url.nil?
        end
      end

      # Reads every SentAttachment of a request body, in message order.
      # @api private
      module SentAttachments
        DATA_URI = /\Adata:([^;,]+);base64,(.*)\z/m.freeze

        module_function

        # @param api [Symbol, nil] :openai, :anthropic, :responses, :bedrock or :gemini
        # @param json [Hash, nil] the parsed request body
        # @return [Array<SentAttachment>]
        def read(api, json)
          return gemini(json) if api == :gemini

          messages = json.is_a?(Hash) ? json[api == :responses ? "input" : "messages"] : nil
          return [] unless messages.is_a?(Array)

          messages.flat_map do |message|
            content = message.is_a?(Hash) ? message["content"] : nil
            next [] unless content.is_a?(Array)

            content.filter_map do |part|
              next unless part.is_a?(Hash)

              case api
              when :anthropic then anthropic(part, message["role"])
              when :responses then responses(part, message["role"])
              when :bedrock then bedrock(part, message["role"])
              else openai(part, message["role"])
              end
            end
          end
        end

        def openai(part, role)
          case part["type"]
          when "image_url"
            url = part.dig("image_url", "url").to_s
            from_uri(url, kind: :image, filename: nil, role: role, part: part)
          when "file"
            from_uri(part.dig("file", "file_data").to_s, kind: :document, filename: part.dig("file", "filename"),
                                                         role: role, part: part)
          end
        end

        # Responses: input_image (a data URI or a URL), input_file (file_data with a
        # filename, or file_url).
        def responses(part, role)
          case part["type"]
          when "input_image"
            from_uri(part["image_url"].to_s, kind: :image, filename: nil, role: role, part: part)
          when "input_file"
            if part["file_url"]
              SentAttachment.new(kind: :document, mime_type: nil, data: nil, url: part["file_url"],
                                 filename: part["filename"], role: role, part: part)
            else
              from_uri(part["file_data"].to_s, kind: :document, filename: part["filename"], role: role, part: part)
            end
          end
        end

        def anthropic(part, role)
          kind = { "image" => :image, "document" => :document }[part["type"]]
          return nil unless kind

          source = part["source"] || {}
          if source["type"] == "url"
            SentAttachment.new(kind: kind, mime_type: nil, data: nil, url: source["url"], role: role, part: part)
          else
            SentAttachment.new(kind: kind, mime_type: source["media_type"], data: decode(source["data"]), url: nil,
                               role: role, part: part)
          end
        end

        # Converse: {"image": {"format": "png", "source": {"bytes"}}}, {"document": {"format":
        # "pdf", "name", "source": {"bytes"}}}.
        def bedrock(part, role)
          key = %w[image document].find { |k| part[k].is_a?(Hash) }
          return nil unless key

          kind = key.to_sym
          block = part[key]
          format = block["format"].to_s
          mime = kind == :image ? "image/#{format}" : { "pdf" => "application/pdf" }.fetch(format, format)
          source = block["source"].is_a?(Hash) ? block["source"] : {}
          SentAttachment.new(kind: kind, mime_type: mime, data: decode(source["bytes"]), url: nil,
                             filename: block["name"], role: role, part: part)
        end

        def gemini(json)
          contents = json.is_a?(Hash) ? json["contents"] : nil
          return [] unless contents.is_a?(Array)

          contents.flat_map do |content|
            parts = content.is_a?(Hash) ? content["parts"] : nil
            next [] unless parts.is_a?(Array)

            parts.filter_map { |part| gemini_part(part, content["role"]) if part.is_a?(Hash) }
          end
        end

        def gemini_part(part, role)
          inline = part["inlineData"]
          file = part["fileData"]
          source = inline.is_a?(Hash) ? inline : file
          return nil unless source.is_a?(Hash)

          mime = source["mimeType"]
          kind = mime.to_s.start_with?("image/") ? :image : :document
          SentAttachment.new(kind: kind, mime_type: mime, data: inline ? decode(inline["data"]) : nil,
                             url: inline ? nil : source["fileUri"], role: role, part: part)
        end

        def from_uri(text, kind:, filename:, role:, part:)
          match = DATA_URI.match(text)
          if match
            SentAttachment.new(kind: kind, mime_type: match[1], data: decode(match[2]), url: nil, filename: filename,
                               role: role, part: part)
          else
            SentAttachment.new(kind: kind, mime_type: nil, data: nil, url: text, filename: filename, role: role,
                               part: part)
          end
        end

        def decode(base64)
          base64.to_s.unpack1("m0")
        rescue ArgumentError
          nil # not strict base64: the test sees nil bytes
        end
      end

      class Request
        # @return [Array<SentAttachment>] the images and PDFs the request carried
        def attachments
          SentAttachments.read(api, json)
        end
      end
    end
  end
end
