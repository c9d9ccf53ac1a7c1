# frozen_string_literal: true

require "json"
require "zlib"

module LlmFailover
  module Testing
    class FakeProvider
      # The body of an OpenAI-compatible /embeddings answer, made deterministically from
      # the texts: each a hashed bag of its words, normalised. Texts that share words get
      # close vectors (cosine similarity is the share of words they have in common, about),
      # texts with no word in common nearly orthogonal ones; the same text, the same vector.
      class EmbeddingAnswer
        DIMENSIONS = 256

        # @param texts [Array<String>] the request's input (a String alone counts as one)
        # @param model [String] echoed back, as providers do
        def initialize(texts, model:)
          @texts = Array(texts)
          @model = model
        end

        # @return [String] the JSON body
        def body
          data = @texts.each_with_index.map do |text, i|
            { "object" => "embedding", "index" => i, "embedding" => self.class.vector(text.to_s) }
          end
          tokens = @texts.sum { |t| self.class.words(t.to_s).size }
          JSON.generate("object" => "list", "data" => data, "model" => @model,
                        "usage" => { "prompt_tokens" => tokens, "total_tokens" => tokens })
        end

        # @param single [Boolean] embedContent's answer (one text) rather than batchEmbedContents'
        # @return [String] the JSON body of Gemini's answer
        def gemini_body(single: false)
          vectors = @texts.map { |text| { "values" => self.class.vector(text.to_s) } }
          JSON.generate(single ? { "embedding" => vectors.first } : { "embeddings" => vectors })
        end

        # @return [Array<String>] lowercase words, in order
        def self.words(text)
          text.downcase.scan(/[[:alnum:]]+/)
        end

        # A word's place and sign from its CRC32; the vector has unit length (an empty
        # text, with no word, gets a fixed unit vector).
        # @return [Array<Float>]
        def self.vector(text)
          v = Array.new(DIMENSIONS, 0.0)
          words(text).tally.each do |word, count|
            h = Zlib.crc32(word)
            v[h % DIMENSIONS] += (h & 0x8000_0000).zero? ? count : -count
          end
          norm = Math.sqrt(v.sum { |x| x * x })
          return Array.new(DIMENSIONS) { |i| i.zero? ? 1.0 : 0.0 } if norm.zero?

          v.map { |x| x / norm }
        end
      end
    end
  end
end
